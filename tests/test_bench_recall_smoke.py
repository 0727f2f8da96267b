"""bench/recall_bench.py runs to the end on a tiny LoCoMo-shaped file made here (never
LoCoMo itself), merges its rows into a report, and skips cleanly without data (nothing
about time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "recall_bench.py"
RECALL = "recall: LoCoMo questions, memory_search top_k=10"
SCALE = "recall: memory_search on LoCoMo turns at scale"
EXISTING = """# sqlgate benchmarks

| benchmark | subject | calls | figure | p50 | p99 | notes |
|---|---|---:|---:|---:|---:|---|
| call overhead: read_query('SELECT 1') | sqlgate (stdio) | 2,000 | 728 calls/s | 1 ms | 2 ms |  |
| recall: LoCoMo questions, memory_search top_k=10 | an old row | 1 | x | x | x | old |
"""


def sample(index: int) -> dict[str, object]:
    turns = [
        ("Ann", "I adopted a zebra named Stripes last week."),
        ("Bob", "Wow, where did you find it?"),
        ("Ann", "At the animal shelter downtown."),
        ("Bob", "I started learning the violin yesterday."),
    ]
    session = [
        {"speaker": who, "dia_id": f"D1:{n}", "text": text}
        for n, (who, text) in enumerate(turns, start=1)
    ]
    session[0]["blip_caption"] = "a photo of a zebra"
    return {
        "sample_id": f"tiny-{index}",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": session,
        },
        "qa": [
            {"question": "What animal did Ann adopt?", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ann find Stripes?", "evidence": ["D1:3"], "category": 1},
            {"question": "When did Bob start the violin?", "evidence": ["D1:4"], "category": 2},
            {"question": "What would Bob play?", "evidence": ["D1:4"], "category": 3},
            {"question": "What did Ann adopt in 2020?", "category": 5},
        ],
    }


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=280,
    )  # fmt: skip


def test_without_the_data_it_says_where_to_put_it(tmp_path: Path) -> None:
    done = run("--data", str(tmp_path / "absent.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("recall benchmark skipped: no LoCoMo file at ")


@pytest.mark.timeout(300)
def test_a_tiny_conversation_is_measured_and_merged_into_the_report(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([sample(0), sample(1)]), encoding="utf-8")
    out = tmp_path / "results.md"
    out.write_text(EXISTING, encoding="utf-8")
    done = run("--data", str(data), "--quick", "--scale", "300", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert "| call overhead: read_query('SELECT 1') | sqlgate (stdio) | 2,000 |" in lines[4]
    ours = [line for line in lines if line.startswith((f"| {RECALL} |", f"| {SCALE} |"))]
    assert "an old row" not in "\n".join(ours)
    subjects = [line.split(" | ")[1] for line in ours]
    assert subjects == [
        "dev 0-6",
        "multi-hop, dev 0-6",
        "temporal, dev 0-6",
        "open-domain, dev 0-6",
        "single-hop, dev 0-6",
        "sqlgate, 300 events",
    ]
    assert ours[0].split(" | ")[2] == "4"  # category 5 is left out
    assert ours[0].split(" | ")[3].startswith("R@1 ")
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    assert table == list(range(table[0], table[-1] + 1))  # one table, rows together
    assert lines[-1].startswith("Recall rows: `python bench/recall_bench.py --data ")
