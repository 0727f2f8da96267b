"""A statement SQLite runs pays nothing for the dialect rewrites: sqlglot's other dialects
and the rewriting modules are imported only once a statement has failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
from pathlib import Path
from sqlgate.config import Settings
from sqlgate.service import Service
from sqlgate.errors import SqlgateError
service = Service.open(Settings(db=Path(sys.argv[1])), session="probe")
service.write_query("CREATE TABLE t(a INTEGER, b TEXT, at TEXT)")
service.write_query("INSERT INTO t VALUES (1, 'x', '2024-01-01'), (2, 'y', '2024-02-01')")
service.read_query("SELECT a, b, CAST(a AS REAL) / 2, b || '+' FROM t WHERE a > 0")
service.write_query("UPDATE t SET b = ? WHERE a = 1", ["z"])
before = sorted(sys.modules)
if sys.argv[2] == "fail":
    try:
        service.read_query("SELECT NOW()")
    except SqlgateError:
        pass
service.close()
print(json.dumps([before, sorted(sys.modules)]))
"""
HEAVY = {
    "sqlglot.dialects.postgres",
    "sqlglot.dialects.mysql",
    "sqlglot.dialects.tsql",
    "sqlglot.dialects.duckdb",
    "sqlgate.engine.dialects.rewrite",
    "sqlgate.engine.dialects.shapes",
}


@pytest.mark.parametrize("then", ["succeed", "fail"])
def test_the_rewrites_load_only_after_a_failure(tmp_path: Path, then: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "a.db"), then],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    before, after = (set(names) for names in json.loads(done.stdout))
    assert not before & HEAVY
    loaded = after & HEAVY
    if then == "fail":  # the probe can see them: a failed statement loads them
        assert {"sqlglot.dialects.postgres", "sqlgate.engine.dialects.rewrite"} <= loaded
    else:
        assert not loaded
