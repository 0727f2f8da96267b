"""Finding Litestream 0.5, and reading what it says: its log lines and its errors, with the
advice a person needs (no binary needed: stand-ins answer `version`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sqlgate.errors import StartupError
from sqlgate.surfaces.replication.litestream import MISSING, failure, find_litestream, parse_line


def stand_in(folder: Path, name: str, version_output: str, code: int = 0) -> Path:
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\nimport sys\nprint({version_output!r})\nsys.exit({code})\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def test_the_first_litestream_0_5_is_taken(tmp_path: Path) -> None:
    old = stand_in(tmp_path, "old", "v0.3.13")
    good = stand_in(tmp_path, "good", "0.5.17")
    found = find_litestream([tmp_path / "absent", old, good])
    assert (found.path, found.version) == (good, "0.5.17")


def test_nothing_found_says_how_to_install_it() -> None:
    with pytest.raises(StartupError) as caught:
        find_litestream([])
    assert str(caught.value) == MISSING
    assert caught.value.exit_code == 8


def test_only_other_versions_found_are_named(tmp_path: Path) -> None:
    old = stand_in(tmp_path, "old", "v0.3.13")
    broken = stand_in(tmp_path, "broken", "nothing useful", code=1)
    with pytest.raises(StartupError) as caught:
        find_litestream([old, broken])
    message = str(caught.value)
    assert message.startswith(MISSING)
    assert f"{old} is Litestream v0.3.13" in message
    assert f"{broken} does not say its version" in message


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        pytest.param(
            'time=2026-12-01T10:06:21Z level=INFO msg="replicating to" type=file '
            "sync-interval=1s path=/srv/b/db",
            ("INFO", "replicating to: type=file sync-interval=1s path=/srv/b/db"),
            id="info-with-fields",
        ),
        pytest.param(
            'time=x level=ERROR msg="sync error" error="write ltx file: \\"disk\\" full"',
            ("ERROR", 'sync error: error=write ltx file: "disk" full'),
            id="quoted-field",
        ),
        pytest.param("time=x level=WARN msg=slow", ("WARN", "slow"), id="bare-message"),
        pytest.param("Error: no matching backup files available",
                     (None, "Error: no matching backup files available"), id="not-logfmt"),
    ],
)  # fmt: skip
def test_log_lines_are_read_as_level_and_message(line: str, parsed: tuple[str, str]) -> None:
    assert parse_line(line) == parsed


@pytest.mark.parametrize(
    ("output", "says"),
    [
        pytest.param("time=x level=INFO msg=hello\nError: sync replica: write ltx file: boom",
                     "sync replica: write ltx file: boom", id="error-line"),
        pytest.param('level=ERROR msg="failed to close database" error="x"',
                     "failed to close database: error=x", id="error-log"),
        pytest.param("Error: s3: cannot load aws config: unable to add custom RootCAs HTTPClient",
                     "unset it for sqlgate", id="ca-bundle-hint"),
        pytest.param("Error: operation error S3: ListObjectsV2, NoSuchBucket: gone",
                     "(the bucket does not exist: create it first)", id="bucket-hint"),
        pytest.param("Error: dial tcp 127.0.0.1:9: connect: connection refused",
                     "is the store running?", id="refused-hint"),
        pytest.param("", "no output", id="silent"),
    ],
)  # fmt: skip
def test_failures_say_what_went_wrong_and_what_to_do(output: str, says: str) -> None:
    assert says in failure(output)
