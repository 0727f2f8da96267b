"""The database's id (migration 8) and the call ids that carry it."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.records.identity import CallRef, database_id, parse_call_ref
from sqlgate.engine.schema import migrate
from sqlgate.errors import InvalidArgument


def _migrated() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    migrate(conn)
    return conn


def test_each_new_database_gets_its_own_id_of_eight_hex_digits() -> None:
    first, second = database_id(_migrated()), database_id(_migrated())
    assert first is not None
    assert second is not None
    assert len(first) == 8
    assert int(first, 16) >= 0
    assert first == first.lower()
    assert first != second


def test_the_id_is_stable_and_cannot_be_changed_or_replaced() -> None:
    conn = _migrated()
    before = database_id(conn)
    for sql in (
        "UPDATE server_info SET value = 'x'",
        "DELETE FROM server_info",
        "INSERT OR REPLACE INTO server_info VALUES ('database_id', 'x')",
    ):
        with pytest.raises(apsw.ConstraintError, match="append-only"):
            conn.execute(sql)
    assert database_id(conn) == before


def test_a_file_before_migration_8_has_no_id() -> None:
    assert database_id(apsw.Connection(":memory:")) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15", CallRef(15)),
        ("15@3f9a1c07", CallRef(15, "3f9a1c07")),
        (" 15@3F9A1C07 ", CallRef(15, "3f9a1c07")),
        ("9223372036854775807@ab", CallRef(2**63 - 1, "ab")),
    ],
)
def test_call_ids_parse(text: str, expected: CallRef) -> None:
    assert parse_call_ref(text) == expected
    assert str(expected) == text.strip().lower()


@pytest.mark.parametrize(
    "text", ["", "0", "-1", "15@", "@ab", "15@xyz", "15@ab@cd", "9223372036854775808", "1.5"]
)
def test_other_call_ids_are_refused_with_the_form_to_use(text: str) -> None:
    with pytest.raises(InvalidArgument, match="AUDIT_ID@DATABASE_ID"):
        parse_call_ref(text)


def test_a_huge_id_is_not_echoed_whole() -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_call_ref("9" * 5000)
    assert len(str(refused.value)) < 300
    assert "(5000 characters)" in str(refused.value)


@pytest.mark.parametrize(("length", "cut"), [(60, False), (61, True)])
def test_an_id_is_echoed_whole_up_to_60_characters(length: int, cut: bool) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_call_ref("x" * length)
    assert (f"({length} characters)" in str(refused.value)) is cut
    assert (repr("x" * length) in str(refused.value)) is not cut
