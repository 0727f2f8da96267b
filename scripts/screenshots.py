"""Screenshots of the console's main pages for the README, from a seeded database.

    python scripts/screenshots.py [--out docs/screenshots]

Seeds a fresh database with a realistic project (scripts/ui_demo_seed.py: a tasks table,
two days of an agent's calls, memory and claims; the hostile seed of scripts/ui_seed.py is
for the browser tests only), runs `sqlgate ui` on it, and saves one 1280x800 PNG per page
with Debian's Chromium (scripts/ui_browser.py). Needs the `test` extra (Playwright) and
/usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ui_browser import browser_missing, launch, running_console
from ui_demo_seed import seed_demo

PAGES = (
    ("activity", "/"),
    ("destructive", "/destructive"),
    ("memory", "/memory"),
    ("claims", "/claims"),
    ("tables", "/tables/rows?name=tasks"),
)
REPO = Path(__file__).resolve().parent.parent


def seed_screenshots(db: Path, *, now: float | None = None, history_rows: int = 900) -> None:
    """The database the screenshots show: a realistic project, nothing hostile."""
    seed_demo(db, now=now, history_rows=history_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="screenshots of sqlgate ui")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args()
    missing = browser_missing()
    if missing:
        sys.exit(f"cannot take screenshots: {missing}")
    args.out.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="harbor-") as tmp:
        db = Path(tmp) / "agent.db"
        seed_screenshots(db)
        with running_console(db, token) as url, launch() as browser:
            page = browser.new_page()
            page.goto(f"{url}/?token={token}")
            for _ in range(50):  # the chain is verified in the background: wait for it
                page.goto(f"{url}/memory")
                if "verifying the chain" not in page.content():
                    break
                page.wait_for_timeout(100)
            for name, path in PAGES:
                page.goto(url + path)
                target = args.out / f"{name}.png"
                page.screenshot(path=str(target))
                print(f"{target} ({target.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
