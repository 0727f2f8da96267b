"""The verifier's fast path: SQLite builds the canonical text, Python hashes it.

Its verdicts must be exactly the exact path's (per-event `_check_event`) and a reference
verifier written here from the hash contract, for every chain and every kind of tampering.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.memory import verification
from sqlgate.memory.chain import GENESIS, ChainStatus, event_hash
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service
from tests.memory.conftest import APPEND_ONLY_TRIGGERS
from tests.records import connect_both

# characters where JSON encoders disagree, if they ever do
ADVERSARIAL = list("\"\\\x00\x01\x08\x0c\x1f\x7f\u2028\u2029\n\r\t/'é😀\U0010ffff\ufeff[,]")
text = st.lists(
    st.one_of(st.sampled_from(ADVERSARIAL), st.characters(blacklist_categories=("Cs",))),
    max_size=12,
).map("".join)
Event = tuple[str, str, str, str, list[str], str]  # ts, session, kind, content, tags, tags form


@st.composite
def events(draw: st.DrawFn) -> Event:
    plain = st.text(alphabet="abcdef-:.0123456789", min_size=1, max_size=8)
    ts, session, kind = (draw(st.one_of(plain, text)) for _ in range(3))
    tags = sorted(set(draw(st.lists(st.one_of(plain, text), max_size=3))))
    return ts, session, kind, draw(text), tags, draw(st.sampled_from(["canonical", "spaced"]))


def stored_tags(tags: list[str], form: str) -> str:
    """Any JSON text of the list is valid in the store; sqlgate writes the canonical one."""
    if form == "canonical":
        return json.dumps(tags, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(tags)  # spaces, and \\u escapes for non-ASCII


@contextmanager
def chain_of(chain: list[Event]) -> Iterator[tuple[Service, Path]]:
    """A database whose events are written directly with contract hashes, and its witness."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "chain.db"
        service = Service.open(Settings(db=path), session="s-verify")
        try:
            head = GENESIS
            conn = service.db.server
            with service.db.server_lock, conn:
                for event_id, (ts, session, kind, content, tags, form) in enumerate(chain, 1):
                    digest = event_hash(event_id, ts, session, kind, content, tags, head)
                    conn.execute(
                        "INSERT INTO memory_events (id, ts, session, kind, content, tags, "
                        "prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (event_id, ts, session, kind, content, stored_tags(tags, form), head,
                         digest),
                    )  # fmt: skip
                    head = digest
            WitnessFile.beside(path).write(Witness(len(chain), head, 0, ""))
            yield service, path
        finally:
            service.close()


def reference_walk(path: Path) -> tuple[int, str] | None:
    """The contract, read straight: (first broken id, kind of break) or None when whole.

    Text is read as bytes and decoded here: a field that is not UTF-8 (or a tags text that
    is not a JSON list of strings, or a field of another type) is changed content.
    """
    conn = connect_both(path, flags=apsw.SQLITE_OPEN_READONLY)
    columns = ", ".join(
        f"typeof({c}) = 'text', CASE typeof({c}) WHEN 'text' THEN CAST({c} AS BLOB) ELSE {c} END"
        for c in ("ts", "session", "kind", "content", "tags", "prev_hash", "hash")
    )
    expected, prev = 1, GENESIS
    try:
        for event_id, *raw in conn.execute(f"SELECT id, {columns} FROM memory_events ORDER BY id"):
            if event_id != expected:
                return expected, "event missing"
            try:  # text is decoded here; a BLOB stays bytes, which is never a string
                fields = [v.decode("utf-8") if is_text else v for is_text, v in pairs(raw)]
            except UnicodeDecodeError:
                return event_id, "content changed"
            ts, session, kind, content, tags_text, prev_hash, stored = fields
            if prev_hash != prev:
                return event_id, "link broken"
            try:
                assert isinstance(tags_text, str)  # json.loads would take bytes too
                tags = json.loads(tags_text)
                assert isinstance(tags, list)
                assert all(isinstance(t, str) for t in tags)
                assert all(isinstance(v, str) for v in (ts, session, kind, content))
                encoded = json.dumps(
                    [event_id, ts, session, kind, content, tags, prev_hash],
                    ensure_ascii=False,
                    separators=(",", ":"),
                ).encode("utf-8")
            except (TypeError, ValueError, AssertionError):
                return event_id, "content changed"
            if hashlib.sha256(encoded).hexdigest() != stored:
                return event_id, "content changed"
            expected, prev = event_id + 1, stored
    finally:
        conn.close()
    return None


def pairs(values: list[Any]) -> list[tuple[bool, Any]]:
    return list(zip(values[::2], values[1::2], strict=True))


def verify_both(service: Service) -> tuple[ChainStatus, ChainStatus]:
    """(the verifier as it runs, the verifier with its fast path switched off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verification, "_FETCH_BATCH", 3)  # many batches, some judged slowly
        fast = service.memory.chain.verify()
        patch.setattr(verification, "_fast_batch", lambda *_: None)
        exact = service.memory.chain.verify()
    return fast, exact


# -- SQLite's JSON text is Python's, byte for byte --------------------------------------
@settings(max_examples=300, deadline=None)
@given(value=text)
def test_sqlite_json_quote_escapes_exactly_like_json_dumps(value: str) -> None:
    conn = apsw.Connection(":memory:")
    (quoted,) = conn.execute("SELECT CAST(json_quote(?) AS BLOB)", (value,)).fetchone()
    assert quoted == json.dumps(value, ensure_ascii=False).encode("utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=st.lists(events(), min_size=1, max_size=8))
def test_the_sql_canonical_text_is_the_contracts_bytes(chain: list[Event]) -> None:
    with chain_of(chain) as (service, _):
        conn = service.db.server
        for event_id, ts, session, kind, content, tags_text, prev_hash, stored in conn.execute(
            "SELECT id, ts, session, kind, content, tags, prev_hash, hash FROM memory_events"
        ).fetchall():
            (built,) = conn.execute(
                "SELECT CAST(concat('[', ?, ',', json_quote(?), ',', json_quote(?), ',', "
                "json_quote(?), ',', json_quote(?), ',', ?, ',\"', ?, '\"]') AS BLOB)",
                (event_id, ts, session, kind, content, tags_text, prev_hash),
            ).fetchone()
            tags = json.loads(tags_text)
            if tags_text == json.dumps(tags, ensure_ascii=False, separators=(",", ":")):
                assert hashlib.sha256(built).hexdigest() == stored
            expected = event_hash(event_id, ts, session, kind, content, tags, prev_hash)
            assert expected == stored


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=st.lists(events(), min_size=0, max_size=10))
def test_any_whole_chain_verifies_on_both_paths(chain: list[Event]) -> None:
    with chain_of(chain) as (service, path):
        fast, exact = verify_both(service)
        assert reference_walk(path) is None
        assert fast == exact
        assert (fast.ok, fast.events, fast.checked) == (True, len(chain), len(chain))


# -- tampering: the same first broken event on both paths and in the reference -----------
COLUMNS = ("ts", "session", "kind", "content", "tags", "prev_hash", "hash")
# tags texts that are JSON, but not the canonical text of a list of strings
ODD_TAGS = ['["\\u0041"]', '["a", "b"]', '["\\ud800"]', "[1]", '["a"]\n', '["x\\"y"]', "[]",
            '["a","a"]', "{}", '"a"']  # fmt: skip
odd_values = st.one_of(
    text,
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.binary(max_size=6),
    st.sampled_from([*ODD_TAGS, "not json", "", "e" * 64, "E" * 64, GENESIS]),
)
Tamper = tuple[str, int, Any]


@st.composite
def tamperings(draw: st.DrawFn, size: int) -> list[Tamper]:
    kinds = st.sampled_from(
        ["set", "invalid-utf8", "delete", "swap", "rehash", "upper-hash", "forge-as-sqlite"]
    )
    return [
        (draw(kinds), draw(st.integers(1, size)), draw(st.tuples(st.sampled_from(COLUMNS),
                                                                 odd_values)))
        for _ in range(draw(st.integers(1, 3)))
    ]  # fmt: skip


def apply(conn: apsw.Connection, tamper: Tamper) -> None:
    kind, event_id, (column, value) = tamper
    if kind == "set":
        conn.execute(f"UPDATE memory_events SET {column} = ? WHERE id = ?", (value, event_id))
    elif kind == "invalid-utf8":
        conn.execute(
            f"UPDATE memory_events SET {column} = CAST(x'61ff62' AS TEXT) WHERE id = ?",
            (event_id,),
        )
    elif kind == "delete":
        conn.execute("DELETE FROM memory_events WHERE id = ?", (event_id,))
    elif kind == "swap":
        conn.execute("UPDATE memory_events SET id = -id WHERE id IN (?, ?)", (event_id, 1))
        conn.execute(
            "UPDATE memory_events SET id = CASE id WHEN -1 THEN ? ELSE 1 END WHERE id < 0",
            (event_id,),
        )
    elif kind == "forge-as-sqlite":
        conn.execute(f"UPDATE memory_events SET {column} = ? WHERE id = ?", (value, event_id))
        with suppress(UnicodeDecodeError):  # an earlier tampering left a hash not in UTF-8
            forge_as_sqlite_renders(conn, event_id)
    elif kind == "upper-hash":
        conn.execute("UPDATE memory_events SET hash = upper(hash) WHERE id = ?", (event_id,))
    else:  # a rewrite with every later hash recomputed: only the witness can tell
        with suppress(UnicodeDecodeError):  # an earlier tampering left text not in UTF-8
            rehash_from(conn, event_id, str(value))


def rehash_from(conn: apsw.Connection, first: int, content: str) -> None:
    found = conn.execute(
        "SELECT id, ts, session, kind, content, tags FROM memory_events WHERE id >= ? ORDER BY id",
        (first,),
    ).fetchall()
    before = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (first - 1,)).fetchone()
    prev = GENESIS if first == 1 or before is None else before[0]
    for event_id, ts, session, kind, old, tags in found:
        try:
            new = content if event_id == first else old
            digest = event_hash(event_id, ts, session, kind, new, json.loads(tags), prev)
        except (TypeError, ValueError):
            return  # an earlier tampering left this event unreadable: stop rewriting here
        conn.execute(
            "UPDATE memory_events SET content = ?, prev_hash = ?, hash = ? WHERE id = ?",
            (new, prev, digest, event_id),
        )
        prev = digest


SQLITE_TEXT = (
    "SELECT CAST(concat('[', id, ',', json_quote(ts), ',', json_quote(session), ',', "
    "json_quote(kind), ',', json_quote(content), ',', tags, ',\"', prev_hash, '\"]') AS BLOB) "
    "FROM memory_events WHERE id = ?"
)


def forge_as_sqlite_renders(conn: apsw.Connection, first: int) -> None:
    """Rehash from `first` on over the text SQLite builds for each event, whatever its
    fields hold: a chain only a verifier that trusted that text blindly would accept."""
    before = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (first - 1,)).fetchone()
    prev = GENESIS if before is None else before[0]
    for (event_id,) in conn.execute(
        "SELECT id FROM memory_events WHERE id >= ? ORDER BY id", (first,)
    ).fetchall():
        conn.execute("UPDATE memory_events SET prev_hash = ? WHERE id = ?", (prev, event_id))
        try:
            (rendered,) = conn.execute(SQLITE_TEXT, (event_id,)).fetchone()
        except apsw.SQLError:
            return  # json_quote refuses a BLOB field
        prev = hashlib.sha256(rendered).hexdigest()
        conn.execute("UPDATE memory_events SET hash = ? WHERE id = ?", (prev, event_id))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chain=st.lists(events(), min_size=1, max_size=9))
def test_tampering_is_reported_at_the_same_first_event_by_fast_exact_and_reference(
    data: st.DataObject, chain: list[Event]
) -> None:
    with chain_of(chain) as (service, path):
        changes = data.draw(tamperings(len(chain)))
        conn = connect_both(path)
        try:
            with conn:
                for trigger in APPEND_ONLY_TRIGGERS:
                    conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
                for change in changes:
                    apply(conn, change)
        finally:
            conn.close()
        fast, exact = verify_both(service)
        assert fast == exact
        expected = reference_walk(path)
        if expected is None:  # the chain is whole as stored: only the witness may object
            assert fast.ok or (fast.reason or "").startswith("witness mismatch"), fast
        else:
            assert (fast.first_broken_id, (fast.reason or "")[: len(expected[1])]) == expected


# -- what the exact path now reports instead of failing ----------------------------------
@pytest.mark.parametrize(
    ("column", "sql_value"),
    [
        pytest.param("content", "CAST(x'61ff62' AS TEXT)", id="content-not-utf8"),
        pytest.param("tags", "CAST(x'5b2261ff225d' AS TEXT)", id="tags-not-utf8"),
        pytest.param("tags", "'[\"\\ud800\"]'", id="tags-lone-surrogate-escape"),
    ],
)
def test_a_field_no_json_or_utf8_can_hold_is_changed_content(column: str, sql_value: str) -> None:
    with chain_of([("t", "s", "note", f"event {n}", ["a"], "canonical") for n in range(4)]) as (
        service,
        path,
    ):
        conn = connect_both(path)
        try:
            with conn:
                conn.execute("DROP TRIGGER memory_events_no_update")
                conn.execute(f"UPDATE memory_events SET {column} = {sql_value} WHERE id = 3")
        finally:
            conn.close()
        status = service.memory.chain.verify()
        assert (status.ok, status.first_broken_id) == (False, 3)
        assert status.reason == "content changed: a field no longer has its stored form"


def test_a_utf16_database_is_verified_on_the_exact_path(tmp_path: Path) -> None:
    path = tmp_path / "utf16.db"
    conn = connect_both(path)
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    conn.execute("CREATE TABLE seed (x)")
    conn.close()
    with Service.open(Settings(db=path, adopt_db=True), session="s-16") as service:
        for n in range(5):
            service.append_event(f"événement {n}", tags=["ü"])
        assert service.db.server.execute("PRAGMA encoding").fetchone() == ("UTF-16le",)
        status = service.memory.chain.verify()
        assert (status.ok, status.events, status.checked) == (True, 5, 5)


FORGED = [
    pytest.param(column, value, id=f"{column}-{label}")
    for column in ("ts", "session", "kind", "content", "tags")
    for label, value in (("integer", 5), ("real", 2.5), ("blob", b'["a"]'))
] + [pytest.param("tags", value, id=f"tags-{value!r}") for value in ODD_TAGS]


@pytest.mark.parametrize(("column", "value"), FORGED)
def test_a_chain_forged_over_sqlites_own_rendering_is_still_broken(
    column: str, value: object
) -> None:
    """Hashes recomputed over the text SQLite builds for the event, whatever its fields
    hold: the fast path accepts exactly what the contract accepts. (A number stored in
    these TEXT columns becomes text, so its forged chain is whole and only the witness
    objects; a BLOB is never a string.)"""
    with chain_of([("t", "s", "note", f"event {n}", ["a"], "canonical") for n in range(4)]) as (
        service,
        path,
    ):
        conn = connect_both(path)
        try:
            with conn:
                for trigger in APPEND_ONLY_TRIGGERS:
                    conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
                apply(conn, ("forge-as-sqlite", 2, (column, value)))
        finally:
            conn.close()
        fast, exact = verify_both(service)
        assert fast == exact
        expected = reference_walk(path)
        if expected is None:
            assert (fast.first_broken_id, fast.reason) == (
                4,
                "witness mismatch: the witnessed head event 4 was rewritten (hashes recomputed)",
            )
        else:
            assert expected == (2, "content changed")
            assert fast.first_broken_id == 2
            assert (fast.reason or "").startswith("content changed")
