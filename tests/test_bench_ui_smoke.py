"""bench/ui_bench.py runs to the end on a small database and merges its rows (nothing about
time is asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ui_bench_writes_a_row_per_page_and_merges_them(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import ui_bench
    finally:
        sys.path.remove(str(REPO / "bench"))
        sys.path.remove(str(REPO / "scripts"))
    rows = ui_bench.ui_pages(300, 300, 1, log=lambda line: None)
    pages = [row for row in rows if row.subject.startswith("`")]
    assert len(pages) == len(ui_bench.PAGES)
    assert all("statuses" not in row.notes for row in pages), [r.notes for r in pages]
    report = tmp_path / "results.md"
    report.write_text("| benchmark | subject |\n|---|---|\n| other | kept |\n", encoding="utf-8")
    ui_bench.merge_into(report, rows, "python bench/ui_bench.py")
    text = report.read_text(encoding="utf-8")
    assert "| other | kept |" in text
    assert text.count("| ui page (") == len(rows)
    assert "Web console rows: `python bench/ui_bench.py`" in text
