"""The dialect corpus of issue 34 (tests/data/dialect_corpus.json): it is well formed, its
runner reads answers and compares rows as documented, and the scores it measures hold the
thresholds below (tuned as the rewrite engine grows; the corpus is run once per module)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.dialect_corpus import (
    COMPARES,
    DIALECTS,
    MUST_NOT,
    TOOLS,
    Answer,
    Item,
    Outcome,
    Rewrite,
    Score,
    Workspace,
    is_ordered,
    load,
    normal,
    result_rows,
    rewrite_in_error,
    rewrite_in_note,
    run,
    same_rows,
    scores,
)

# Thresholds (the lead tunes them once the engine is in): wrong rewrites and noise stay at 0;
# MIN_TWO_TRY is the fraction of a dialect's items right within two tries.
MAX_WRONG_REWRITES = 0
MAX_NOISE = 0
# measured with the rewrites in (bench/results.md): 91.2%, 87.7%, 93.5%, 77.8%
MIN_TWO_TRY = {"postgres": 0.91, "mysql": 0.87, "tsql": 0.93, "duckdb": 0.77}
# the same text in two dialects that mean two things: the rewrite is one dialect's, and the
# answer names the other's in its note (which the test holds), so the agent can choose
AMBIGUOUS = {
    # GREATEST(score, total) with a NULL: PostgreSQL skips it, MySQL answers NULL
    "my-greatest": "MySQL gives NULL if any argument is",
}
# the corpus's size per dialect: it may grow, not shrink unnoticed
MIN_ITEMS = {"postgres": 60, "mysql": 60, "tsql": 40, "duckdb": 15, MUST_NOT: 30}

CORPUS = load()
WITH_EXPECT = [i for i in CORPUS.items if i.expect is not None]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    return {o.item.id: o for o in run(CORPUS)}


def ids(items: list[Item]) -> list[str]:
    return [i.id for i in items]


# -- the corpus is well formed -------------------------------------------------------------
def test_ids_are_unique() -> None:
    counts = Counter(i.id for i in CORPUS.items)
    assert [name for name, n in counts.items() if n > 1] == []


@pytest.mark.parametrize("item", CORPUS.items, ids=ids(list(CORPUS.items)))
def test_item_fields_are_known_and_consistent(item: Item) -> None:
    assert item.dialect in DIALECTS
    assert item.tool in TOOLS
    assert item.expect_tool in TOOLS
    assert item.compare in COMPARES
    assert item.source.strip()
    assert item.sql.strip()
    assert item.no_rewrite == (item.expect is None), "expect null exactly on no_rewrite items"
    assert not (item.trap and item.valid_as_is)
    assert not item.fails or item.no_rewrite
    if item.dialect == "sqlite":
        assert item.no_rewrite, "a SQLite item is there to get no rewrite"


def test_corpus_size_per_dialect() -> None:
    counts = Counter(MUST_NOT if i.no_rewrite else i.dialect for i in CORPUS.items)
    short = {k: counts[k] for k, least in MIN_ITEMS.items() if counts[k] < least}
    assert short == {}


@pytest.mark.parametrize("item", WITH_EXPECT, ids=ids(WITH_EXPECT))
def test_expect_runs_and_shows_something(item: Item, outcomes: dict[str, Outcome]) -> None:
    expected = outcomes[item.id].expected
    assert expected is not None
    assert expected.error is None, expected.error
    assert expected.rewrite is None, "the expected statement itself gets a note"
    assert expected.rows or item.empty_ok, "an empty expected result proves nothing"


@pytest.mark.parametrize("item", WITH_EXPECT, ids=ids(WITH_EXPECT))
def test_dialect_statement_needs_the_rewrite(item: Item, outcomes: dict[str, Outcome]) -> None:
    """What the flags say of the statement as sent: it fails in SQLite, or (a trap) it runs
    and gives another result, or (valid as is) it already gives the expected one."""
    outcome = outcomes[item.id]
    if item.valid_as_is:
        assert outcome.raw_match, outcome.first.error
    elif item.trap:
        assert outcome.first.error is None, outcome.first.error
        assert not outcome.raw_match, "a trap must give another result in SQLite"
    else:
        assert outcome.first.error is not None, "runs as sent: mark it trap or valid_as_is"


MUST_NOT_ITEMS = [i for i in CORPUS.items if i.no_rewrite]


@pytest.mark.parametrize("item", MUST_NOT_ITEMS, ids=ids(MUST_NOT_ITEMS))
def test_must_not_item_runs_unless_marked_failing(item: Item, outcomes: dict[str, Outcome]) -> None:
    error = outcomes[item.id].first.error
    assert (error is not None) is item.fails, error


def test_a_write_item_changes_the_database(outcomes: dict[str, Outcome]) -> None:
    with Workspace(CORPUS.schema) as space:
        initial = space.initial
    same = [
        o.item.id
        for o in outcomes.values()
        if o.item.tool != "read_query" and o.expected is not None
        if o.expected.rows == initial and not o.item.empty_ok
    ]
    assert same == []


# -- the runner reads answers --------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tool", "found"),
    [
        pytest.param(
            'SQLite error: no such column: "x" - double quotes name a column; text goes in '
            "'single quotes'. Send instead: SELECT 'x' FROM users",
            "read_query",
            Rewrite("read_query", "SELECT 'x' FROM users"),
            id="today-double-quotes",
        ),
        pytest.param(
            "TRUNCATE is not SQLite. send instead, as destructive_query: DELETE FROM orders",
            "write_query",
            Rewrite("destructive_query", "DELETE FROM orders"),
            id="another-tool",
        ),
        pytest.param(
            'near "ILIKE": syntax error. ILIKE folds ASCII only as LIKE does. Send instead: '
            "SELECT 1 WHERE 'a' LIKE 'A'\n",
            "read_query",
            Rewrite("read_query", "SELECT 1 WHERE 'a' LIKE 'A'"),
            id="trailing-newline",
        ),
        pytest.param(
            "x. Send instead: SELECT 'send instead: no' Send instead: SELECT 2",
            "read_query",
            Rewrite("read_query", "SELECT 'send instead: no' Send instead: SELECT 2"),
            id="first-match-to-the-end",
        ),
        pytest.param(
            'SQLite error: near "SHOW": syntax error. Next: check the SQL',
            "read_query",
            None,
            id="no-offer",
        ),
        pytest.param("use list_tables. Send instead: ", "read_query", None, id="empty-statement"),
        pytest.param("SEND INSTEAD: SELECT 1", "read_query", None, id="case-of-the-words"),
    ],
)
def test_rewrite_in_error(text: str, tool: str, found: Rewrite | None) -> None:
    assert rewrite_in_error(text, tool) == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param(
            "ratio\n12\n# 1 row\n# note: CAST(x AS NUMERIC) divides as integers in SQLite; "
            "send instead: SELECT CAST(a AS REAL) / b FROM t",
            Rewrite("read_query", "SELECT CAST(a AS REAL) / b FROM t"),
            id="note-after-count",
        ),
        pytest.param(
            "ratio\n12\n# note: + adds numbers in SQLite; send instead: SELECT a || b FROM t\n"
            "# 1 row",
            Rewrite("read_query", "SELECT a || b FROM t"),
            id="note-before-count",
        ),
        pytest.param("ratio\n12\n# 1 row", None, id="no-note"),
        pytest.param("ratio\n12\n# note: truncated at 100 rows\n# 1 row", None, id="other-note"),
        pytest.param("a\n#note: send instead: SELECT 1\n", None, id="a-row-not-a-trailer"),
    ],
)
def test_rewrite_in_note(text: str, found: Rewrite | None) -> None:
    assert rewrite_in_note(text, "read_query") == found


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        pytest.param(
            "id,name\n1,Ann\n2,bob\n# 2 rows", (("1.0", "Ann"), ("2.0", "bob")), id="plain"
        ),
        pytest.param("id,name\n# 0 rows", (), id="empty"),
        pytest.param('a,b\n"x,y","p\nq"\n# 1 row', (("x,y", "p\nq"),), id="quoted"),
        pytest.param('a,b\n,""\n# 1 row\n# note: x', (("", ""),), id="null-and-empty"),
        pytest.param("n\n2.50\n# 1 row", (("2.5",),), id="number-by-value"),
        pytest.param("n\n\n1\n# 2 rows", (("",), ("1.0",)), id="one-null-column"),
    ],
)
def test_result_rows(text: str, rows: tuple[tuple[str, ...], ...]) -> None:
    assert result_rows(text) == rows


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        pytest.param(2, "2.0", True, id="int-and-real"),
        pytest.param("12.5714285714", 88 / 7, True, id="rounded"),
        pytest.param("12", 88 / 7, False, id="integer-division"),
        pytest.param(None, "", True, id="null-and-empty"),
        pytest.param("Alice", "alice", False, id="case"),
        pytest.param("2023", 2023, True, id="text-year-and-number"),
        pytest.param("nan", "nan", True, id="nan-text"),
    ],
)
def test_normal(left: object, right: object, same: bool) -> None:
    assert (normal(left) == normal(right)) is same


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT id FROM t ORDER BY id", True),
        ("SELECT id FROM t ORDER BY id DESC LIMIT 3", True),
        ("SELECT id FROM t", False),
        ("SELECT SUM(x) OVER (ORDER BY id) FROM t", False),
        ("SELECT id FROM (SELECT id FROM t ORDER BY id)", False),
        ("SELECT group_concat(x, ',' ORDER BY x) FROM t GROUP BY y ORDER BY y;", True),
    ],
)
def test_is_ordered(sql: str, ordered: bool) -> None:
    assert is_ordered(sql) is ordered


def test_same_rows_in_order_or_as_a_multiset() -> None:
    a = (("1",), ("2",))
    b = (("2",), ("1",))
    assert same_rows(a, b, ordered=False)
    assert not same_rows(a, b, ordered=True)
    assert not same_rows(a, (("1",),), ordered=False)
    assert not same_rows(a + a, a, ordered=False)
    assert not same_rows(None, a, ordered=False)


ROW_LISTS = st.lists(st.tuples(st.text(max_size=3), st.integers()), max_size=6)


@settings(max_examples=100, deadline=None)
@given(ROW_LISTS.flatmap(lambda rows: st.tuples(st.just(rows), st.permutations(rows))))
def test_a_multiset_is_the_same_in_any_order(pair: tuple[list[Any], list[Any]]) -> None:
    rows, shuffled = pair
    got = tuple(tuple(normal(v) for v in row) for row in rows)
    again = tuple(tuple(normal(v) for v in row) for row in shuffled)
    assert same_rows(again, got, ordered=False)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)))
def test_normal_is_idempotent(value: object) -> None:
    assert normal(normal(value)) == normal(value)


# -- the runner classifies outcomes --------------------------------------------------------
ROWS = (("1.0",),)
OTHER = (("2.0",),)
OFFER = Rewrite("read_query", "SELECT 1")


def shaped(first: Answer, followed: Answer | None, no_rewrite: bool = False) -> Outcome:
    item = Item(
        "x",
        "postgres",
        "s",
        "read_query",
        "SELECT",
        None if no_rewrite else "SELECT 1",
        "read_query",
        no_rewrite=no_rewrite,
    )
    expected = None if no_rewrite else Answer(ROWS, None, None)
    return Outcome(item, first, expected, followed, Answer(ROWS, None, None))


@pytest.mark.parametrize(
    ("first", "followed", "verdict"),
    [
        pytest.param(Answer(ROWS, None, None), None, "first_try", id="right-as-sent"),
        pytest.param(
            Answer(None, "err", OFFER),
            Answer(ROWS, None, None),
            "after_rewrite",
            id="rewrite-right",
        ),
        pytest.param(
            Answer(None, "err", OFFER),
            Answer(OTHER, None, None),
            "wrong_rewrite",
            id="rewrite-wrong",
        ),
        pytest.param(
            Answer(None, "err", OFFER),
            Answer(None, "err", None),
            "broken_rewrite",
            id="rewrite-fails",
        ),
        pytest.param(Answer(None, "err", None), None, "no_offer", id="no-offer"),
        pytest.param(Answer(OTHER, None, None), None, "silent", id="silently-wrong"),
        pytest.param(
            Answer(OTHER, None, OFFER),
            Answer(ROWS, None, None),
            "after_rewrite",
            id="trap-note-right",
        ),
        pytest.param(
            Answer(ROWS, None, OFFER),
            Answer(ROWS, None, None),
            "after_rewrite",
            id="right-with-a-note-is-not-first-try",
        ),
        pytest.param(
            Answer(OTHER, None, OFFER),
            Answer(OTHER, None, None),
            "wrong_rewrite",
            id="trap-note-wrong",
        ),
    ],
)
def test_outcome_verdicts(first: Answer, followed: Answer | None, verdict: str) -> None:
    outcome = shaped(first, followed)
    verdicts = {
        "first_try": outcome.first_try,
        "after_rewrite": outcome.after_rewrite,
        "wrong_rewrite": outcome.wrong_rewrite,
        "broken_rewrite": outcome.broken_rewrite,
        "no_offer": not outcome.first_try and not outcome.offered,
        "silent": outcome.silent,
    }
    # silently wrong is a kind of "no rewrite offered": the table shows both
    expected = ["no_offer", "silent"] if verdict == "silent" else [verdict]
    assert [name for name, true in verdicts.items() if true] == expected
    assert outcome.two_try is (verdict in ("first_try", "after_rewrite"))


@pytest.mark.parametrize(
    ("compare", "right"), [("rows", False), ("first_column", True)], ids=["rows", "first-column"]
)
def test_a_listing_compares_by_its_names(compare: str, right: bool) -> None:
    listing = "SELECT name, type, pk FROM pragma_table_info('t') ORDER BY cid"
    item = Item(
        "x", "mysql", "s", "read_query", "DESCRIBE t", listing, "read_query", compare=compare
    )
    want = Answer((("id", "INTEGER", "1"), ("v", "TEXT", "0")), None, None)
    offered = Answer(None, "err", Rewrite("read_query", "SELECT name, type FROM t"))
    got = Answer((("id", "INTEGER"), ("v", "TEXT")), None, None)
    assert Outcome(item, offered, want, got, None).after_rewrite is right
    swapped = Answer((("v", "TEXT"), ("id", "INTEGER")), None, None)
    assert not Outcome(item, offered, want, swapped, None).after_rewrite


def test_scores_count_noise_on_must_not_items_only() -> None:
    noisy = shaped(Answer(None, "err", OFFER), Answer(ROWS, None, None), no_rewrite=True)
    quiet = shaped(Answer(None, "err", None), None, no_rewrite=True)
    right = shaped(Answer(None, "err", OFFER), Answer(ROWS, None, None))
    table = {s.group: s for s in scores([noisy, quiet, right])}
    assert table[MUST_NOT].noise == 1
    assert table[MUST_NOT].items == 2
    assert table["postgres"] == Score("postgres", 1, 0, 1, 0, 0, 0, 0, 1, 0)
    assert table["all"].two_try == 1


# -- the scores ----------------------------------------------------------------------------
def test_no_rewrite_gives_a_wrong_result(outcomes: dict[str, Outcome]) -> None:
    wrong = [o.item.id for o in outcomes.values() if o.wrong_rewrite and not o.item.no_rewrite]
    unexplained = [item for item in wrong if item not in AMBIGUOUS]
    assert len(unexplained) <= MAX_WRONG_REWRITES, f"wrong rewrites: {unexplained}"


@pytest.mark.parametrize(("item", "words"), sorted(AMBIGUOUS.items()))
def test_an_ambiguous_statement_names_the_other_meaning(
    outcomes: dict[str, Outcome], item: str, words: str
) -> None:
    first = outcomes[item].first
    assert first.error is not None
    assert words in first.error


def test_no_rewrite_on_must_not_items(outcomes: dict[str, Outcome]) -> None:
    noise = [o.item.id for o in outcomes.values() if o.item.no_rewrite and o.offered]
    assert len(noise) <= MAX_NOISE, f"noise: {noise}"


@pytest.mark.parametrize("dialect", sorted(MIN_TWO_TRY))
def test_right_within_two_tries(dialect: str, outcomes: dict[str, Outcome]) -> None:
    mine = [o for o in outcomes.values() if o.item.dialect == dialect and not o.item.no_rewrite]
    missed = [o.item.id for o in mine if not o.two_try]
    fraction = 1 - len(missed) / len(mine)
    assert fraction >= MIN_TWO_TRY[dialect], f"{fraction:.3f} within two tries; missed: {missed}"
