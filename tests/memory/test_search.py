"""Search, timeline, details and stats over a small fixture whose every timestamp is known."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.memory import search as search_module
from sqlgate.memory.search import fts_query, preview
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.memory.conftest import OpenMemory, tampered
from tests.records import connect_both

DAY = 86400.0
LONG = "long " + "word " * 60 + "tail"
# (day, session, content, kind, tags); ids follow this order
FIXTURE: list[tuple[int, str, str, str, list[str]]] = [
    (0, "s-one", "deploy the payments service to staging", "note", ["deploy"]),
    (0, "s-one", "zebra migration failed: zebra table locked", "bug", ["db", "migration"]),
    (1, "s-one", "the zebra crossing mentioned once, among other words", "note", ["misc"]),
    (1, "s-two", "decided to use postgres for payments", "decision", ["db"]),
    (2, "s-two", "deploy to production done", "note", ["deploy", "prod"]),
    (2, "s-two", LONG, "note", []),
]  # fmt: skip
EVERYTHING = "deploy zebra payments postgres long"


@pytest.fixture
def recall(open_memory: OpenMemory, wall_clock: FakeClock) -> Service:
    """Events 1..6: days 2026-01-01..03, two sessions. The wall clock steps a second at each
    reading, and each call reads it twice (its event, then its audit row): events of a day
    are two seconds apart, at :01, :03 (day 1), :05, :07 (day 2), :09, :11 (day 3)."""
    services = {name: open_memory(session=name) for name in ("s-one", "s-two")}
    day = 0
    for event_day, session, content, kind, tags in FIXTURE:
        if event_day != day:
            wall_clock.advance(DAY * (event_day - day))
            day = event_day
        services[session].append_event(content, kind=kind, tags=tags)
    return services["s-one"]


def table(text: str) -> list[dict[str, str]]:
    """The CSV part of a tool answer (lines before the `#` trailer)."""
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


def ids(text: str) -> list[int]:
    return [int(row["id"]) for row in table(text)]


# -- fts_query --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "query"),
    [
        pytest.param("zebra", '"zebra"', id="one-word"),
        pytest.param("zebra NEAR crossing", '"zebra" OR "NEAR" OR "crossing"', id="operator-word"),
        pytest.param('say "hi" (now)', '"say" OR "hi" OR "now"', id="quotes-parens"),
        pytest.param("content:zebra", '"content" OR "zebra"', id="column-filter"),
        pytest.param("deploy* dep", '"deploy"* OR "dep"', id="prefix"),
        pytest.param("zebra zebra Zebra", '"zebra" OR "Zebra"', id="repeats-dropped"),
        pytest.param(
            "When did the zebra cross?", '"zebra" OR "cross"', id="question-words-dropped"
        ),
        pytest.param("a a A", '"a" OR "A"', id="only-stop-words-kept"),
        pytest.param("the*", '"the"*', id="a-prefix-is-never-a-stop-word"),
    ],
)
def test_fts_query_quotes_every_word(text: str, query: str) -> None:
    assert fts_query(text) == query


def test_fts_query_keeps_at_most_32_words() -> None:
    assert fts_query(" ".join(f"w{n}" for n in range(40))).count(" OR ") == 31


@pytest.mark.parametrize("text", ["", "   ", "*", "()", '"', "-- ;", 5], ids=repr)
def test_fts_query_without_words_is_an_error(text: object) -> None:
    with pytest.raises(InvalidArgument, match=r"no words|must be text"):
        fts_query(text)


@pytest.fixture(scope="module")
def fts_table() -> Any:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(content, tags, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO f VALUES ('zebra crossing', 'a b')")
    yield conn
    conn.close()


@settings(max_examples=200, deadline=None)
@given(text=st.text() | st.text(st.sampled_from("ab \"*():^-+ANDORNEAR{}\\'")))
def test_fts_query_of_any_text_is_an_error_or_a_query_fts5_accepts(
    fts_table: Any, text: str
) -> None:
    if not any(ch.isalnum() or ch == "_" for ch in text):
        with pytest.raises(InvalidArgument, match="no words"):
            fts_query(text)
        return
    query = fts_query(text)
    fts_table.execute("SELECT rowid FROM f WHERE f MATCH ?", (query,)).fetchall()


# -- memory_search ----------------------------------------------------------------------
def test_search_ranks_more_mentions_of_a_rare_word_first(recall: Service) -> None:
    assert ids(recall.memory_search("zebra")) == [2, 3]


def test_search_ranks_events_matching_more_words_first(recall: Service) -> None:
    assert ids(recall.memory_search("deploy payments"))[0] == 1


def test_search_finds_prefixes_and_stems(recall: Service) -> None:
    assert ids(recall.memory_search("migrat*")) == [2]
    assert set(ids(recall.memory_search("deploying"))) == {1, 5}


def test_search_answers_a_compact_index_and_a_next_step(recall: Service) -> None:
    answer = recall.memory_search("zebra")
    assert answer.splitlines()[0] == "id,score,kind,date,tags,preview"
    first = table(answer)[0]
    assert first == {
        "id": "2",
        "score": first["score"],
        "kind": "bug",
        "date": "2026-01-01 00:00",
        "tags": "db migration",
        "preview": "zebra migration failed: zebra table locked",
    }
    assert float(first["score"]) > float(table(answer)[1]["score"]) > 0
    assert answer.splitlines()[-1] == (
        "# 2 results; next: memory_timeline(ids=[2, 3]) for what happened around them, "
        "memory_details(ids=[2, 3]) for full text"
    )


def test_search_scores_are_relative_to_the_best_result_of_the_answer(recall: Service) -> None:
    # raw, this answer's best read 1.73, while a word in most events of a memory read 1e-06:
    # numbers with no scale, and one answer showed 0.797 beside 1.89e-06
    scores = [row["score"] for row in table(recall.memory_search("deploy the payments"))]
    assert scores[0] == "1.00"
    assert all(re.fullmatch(r"[01]\.\d\d", score) for score in scores), scores


@pytest.mark.parametrize(
    ("scores", "shown"),
    [
        pytest.param([0.797, 1.89e-06], ["1.00", "0.00"], id="tiny-beside-large"),
        pytest.param([3.0, 1.5, 0.75], ["1.00", "0.50", "0.25"], id="halves"),
        pytest.param([2e-06, 1e-06], ["1.00", "0.50"], id="all-tiny"),
        pytest.param([5.0, 5.0], ["1.00", "1.00"], id="ties"),
        pytest.param([0.0, 0.0], ["0.00", "0.00"], id="no-best"),
        pytest.param([], [], id="none"),
    ],
)
def test_shown_scores_put_an_answer_on_a_scale_of_0_to_1(
    scores: list[float], shown: list[str]
) -> None:
    assert search_module.shown_scores(scores) == shown


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(min_value=0, max_value=1e12, allow_nan=False) | st.sampled_from([1e-6, 1.89e-06]),
        max_size=50,
    )
)
def test_shown_scores_are_fixed_point_from_0_to_1_and_never_rise(scores: list[float]) -> None:
    shown = search_module.shown_scores(sorted(scores, reverse=True))
    assert all(re.fullmatch(r"[01]\.\d\d", score) for score in shown), shown
    numbers = [float(score) for score in shown]
    assert all(0 <= n <= 1 for n in numbers)
    assert numbers == sorted(numbers, reverse=True)


_WORDS = ("deploy", "the", "zebra", "migration", "failed", "payments", "staging", "when")


@settings(max_examples=25, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8),
            st.sampled_from(["s-one", "s-two"]),
        ),
        min_size=1,
        max_size=15,
    ),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
    top_k=st.integers(1, 10),
)
def test_search_scores_of_any_memory_are_from_0_to_1_and_never_rise_down_the_list(
    events: list[tuple[list[str], str]], query: list[str], top_k: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        services: dict[str, Service] = {}
        try:
            for words, session in events:
                if session not in services:
                    services[session] = Service.open(
                        Settings(db=Path(folder) / "m.db"), session=session
                    )
                services[session].append_event(" ".join(words))
            answer = next(iter(services.values())).memory_search(" ".join(query), top_k)
        finally:
            for service in services.values():
                service.close()
    shown = [row["score"] for row in table(answer)]
    assert all(re.fullmatch(r"[01]\.\d\d", score) for score in shown), answer
    numbers = [float(score) for score in shown]
    assert numbers == sorted(numbers, reverse=True)
    assert not numbers or numbers[0] == 1.0


def test_search_previews_are_one_short_line(recall: Service) -> None:
    (row,) = table(recall.memory_search("long tail"))
    assert row["preview"] == preview(LONG)
    assert len(row["preview"]) == 100
    assert row["preview"].endswith("…")


def test_search_without_results_suggests_what_to_try(recall: Service) -> None:
    answer = recall.memory_search("kangaroo")
    assert ids(answer) == []
    assert answer.splitlines()[-1].startswith("# 0 results; try")


@pytest.mark.parametrize(
    "query",
    ["zebra AND", '"zebra', "zebra)", "NEAR(zebra", "content:zebra", "-zebra", "^zebra",
     "zebra OR", "zebra's", "{zebra}", "zebra NOT", "(zebra*"],
)  # fmt: skip
def test_plain_words_with_query_syntax_never_raise(recall: Service, query: str) -> None:
    assert ids(recall.memory_search(query))[0] == 2


def test_top_k_limits_the_results(recall: Service) -> None:
    assert len(ids(recall.memory_search(EVERYTHING, top_k=50))) == 6
    assert len(ids(recall.memory_search(EVERYTHING, top_k=2))) == 2


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        pytest.param({}, [5, 6], id="no-filter"),
        pytest.param({"session": "s-one"}, [2, 3], id="filters-apply-before-the-window"),
        pytest.param({"until": "2026-01-02"}, [3, 4], id="until-reaches-older-events"),
    ],
)
def test_search_ranks_only_the_newest_window_of_matches(
    recall: Service, monkeypatch: pytest.MonkeyPatch, filters: dict[str, Any], expected: list[int]
) -> None:
    monkeypatch.setattr(search_module, "RANK_WINDOW", 2)
    answer = recall.memory_search(EVERYTHING, top_k=50, **filters)
    assert sorted(ids(answer)) == expected
    assert answer.splitlines()[-1] == (
        "# ranked the newest 2 matching events only; older ones may match too: "
        "add words, filters or until= to reach them"
    )


def test_search_within_the_window_ranks_by_bm25(
    recall: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_module, "RANK_WINDOW", 3)  # the matches 2, 3 and 5; not 1
    assert ids(recall.memory_search("deploy production zebra", top_k=1)) == [5]
    monkeypatch.setattr(search_module, "RANK_WINDOW", 1000)
    answer = recall.memory_search("zebra")
    assert ids(answer) == [2, 3]
    assert "newest" not in answer


FILTERS: list[Any] = [
    pytest.param({"kind": "bug"}, [2], id="kind"),
    pytest.param({"kind": "decision"}, [4], id="kind-decision"),
    pytest.param({"session": "s-two"}, [4, 5, 6], id="session"),
    pytest.param({"session": "s-none"}, [], id="unknown-session"),
    pytest.param({"tags": ["db"]}, [2, 4], id="one-tag"),
    pytest.param({"tags": ["db", "migration"]}, [2], id="all-tags-must-match"),
    pytest.param({"tags": ["deploy", "prod"]}, [5], id="two-tags"),
    pytest.param({"since": "2026-01-02"}, [3, 4, 5, 6], id="since-date"),
    pytest.param({"until": "2026-01-01"}, [1, 2], id="until-date-includes-the-day"),
    pytest.param({"since": "2026-01-02", "until": "2026-01-02"}, [3, 4], id="one-day"),
    pytest.param({"since": "2026-01-02T00:00:06Z"}, [4, 5, 6], id="since-datetime"),
    pytest.param({"until": "2026-01-02T00:00:05Z"}, [1, 2, 3], id="until-datetime-inclusive"),
    pytest.param({"until": "2026-01-02T00:00:04.999Z"}, [1, 2], id="until-just-before"),
    pytest.param({"since": "2026-01-02T01:00:05+01:00"}, [3, 4, 5, 6], id="since-offset"),
    pytest.param({"kind": "note", "session": "s-two", "tags": ["deploy"]}, [5], id="combined"),
]


@pytest.mark.parametrize(("filters", "expected"), FILTERS)
def test_search_filters(recall: Service, filters: dict[str, Any], expected: list[int]) -> None:
    assert sorted(ids(recall.memory_search(EVERYTHING, top_k=50, **filters))) == expected


def appended(service: Service, *contents: str) -> Service:
    for content in contents:
        service.append_event(content, "note")
    return service


FILLER = ("lunch at noon", "the build is green", "rain all day", "new laptop arrived")


def test_search_ranks_an_event_beside_a_strong_match_above_an_equal_lone_one(
    open_memory: OpenMemory,
) -> None:
    service = appended(open_memory(), "zebra zebra zebra", "crossing", *FILLER, "crossing", *FILLER)
    # 2 and 7 match "crossing" alike; a tie would put the newer first, but 2 sits beside 1
    assert ids(service.memory_search("zebra crossing"))[:3] == [1, 2, 7]


def test_search_puts_the_newer_of_equal_scores_first_and_cuts_at_top_k(
    open_memory: OpenMemory,
) -> None:
    # eight equal events in one session: 3 to 6 have two matched neighbours on each side
    # and tie at the top, newest first; 2 and 7 have three, 1 and 8 two
    service = appended(open_memory(), *["zebra crossing"] * 8)
    assert ids(service.memory_search("zebra crossing", top_k=3)) == [6, 5, 4]
    assert ids(service.memory_search("zebra crossing", top_k=8)) == [6, 5, 4, 3, 7, 2, 8, 1]


def test_search_neighbours_count_within_one_session(open_memory: OpenMemory) -> None:
    first, other = open_memory(session="s-a"), open_memory(session="s-b")
    appended(first, *FILLER)
    appended(other, "zebra zebra zebra")  # 5, in another session than 6
    appended(first, "crossing", *FILLER, "crossing")  # 6 and 11
    assert ids(first.memory_search("zebra crossing"))[:3] == [5, 11, 6]


def test_search_counts_an_event_labelled_with_a_word_of_the_question_double(
    open_memory: OpenMemory,
) -> None:
    service = appended(
        open_memory(),
        *FILLER,
        "Ann: zebra zebra, Bob",
        *FILLER,
        "Bob: a zebra walked past the office window",
    )
    answer = service.memory_search("What did Bob see, a zebra?")
    assert ids(answer) == [10, 5]


# -- memory_timeline --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("asked", "window", "shown"),
    [
        pytest.param([1], 3, [1, 2, 3, 4], id="at-the-start"),
        pytest.param([6], 3, [3, 4, 5, 6], id="at-the-end"),
        pytest.param([3], 1, [2, 3, 4], id="middle"),
        pytest.param([2, 4], 1, [1, 2, 3, 4, 5], id="overlapping-merged"),
        pytest.param([1, 6], 1, [1, 2, 5, 6], id="apart"),
        pytest.param([4, 2], 0, [2, 4], id="window-zero"),
        pytest.param([3], 20, [1, 2, 3, 4, 5, 6], id="wider-than-the-chain"),
    ],
)
def test_timeline_shows_neighbours_in_chain_order(
    recall: Service, asked: list[int], window: int, shown: list[int]
) -> None:
    answer = recall.memory_timeline(asked, window=window)
    rows = table(answer)
    assert [int(row["id"]) for row in rows] == shown
    assert [int(row["id"]) for row in rows if row["asked"] == "*"] == sorted(asked)
    assert answer.splitlines()[-1] == (
        f"# {len(shown)} events around {len(asked)} asked (*); memory_details for full text"
    )


def test_timeline_shows_previews_only(recall: Service) -> None:
    (row,) = table(recall.memory_timeline([6], window=0))
    assert row["preview"] == preview(LONG)
    assert set(row) == {"id", "date", "kind", "preview", "asked"}


# -- memory_details ---------------------------------------------------------------------
def test_details_give_full_content_and_metadata_in_the_asked_order(
    recall: Service, db_path: Path
) -> None:
    answer = recall.memory_details([6, 2])
    six, two = answer.split("\n\n## ")
    assert six.startswith("## event 6 · 2026-01-03T00:00:11.000Z · note · session s-two\n")
    assert six.endswith(f"\n{LONG}")
    assert two.startswith(
        "event 2 · 2026-01-01T00:00:03.000Z · bug · session s-one · tags: db migration\n# hash "
    )
    conn = connect_both(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    (digest, prev) = conn.execute(
        "SELECT hash, prev_hash FROM memory_events WHERE id = 2"
    ).fetchone()
    conn.close()
    assert f"\n# hash {digest} · prev {prev}\n" in two


def test_details_of_unknown_ids_name_them(recall: Service) -> None:
    with pytest.raises(NotFound, match=r"no event 7, 99; ids run from 1 to 6"):
        recall.memory_details([2, 7, 99])


def test_details_stop_at_the_byte_cap_and_say_which_ids_are_left(
    open_memory: OpenMemory,
) -> None:
    service = open_memory(max_result_bytes=900)
    for n in range(4):
        service.append_event(f"event {n} " + "x" * 150)
    answer = service.memory_details([1, 2, 3, 4])
    body, trailer = answer.rsplit("\n# ", 1)
    assert body.count("## event") == 2
    assert len(body.encode()) <= 900
    assert trailer == "truncated: 900 bytes; ask again for ids [3, 4]"


def test_details_always_give_the_first_event_whole(open_memory: OpenMemory) -> None:
    service = open_memory(max_result_bytes=200)
    service.append_event("y" * 500)
    service.append_event("second")
    answer = service.memory_details([1, 2])
    assert "y" * 500 in answer
    assert answer.endswith("# truncated: 200 bytes; ask again for ids [2]")


# -- memory_stats -----------------------------------------------------------------------
def test_stats_summarise_the_memory(recall: Service) -> None:
    recall.checkpoint("half way")
    stats = json.loads(recall.memory_stats())
    assert stats["events"] == 6
    assert stats["checkpoints"] == 1
    assert stats["kinds"] == {"note": 4, "bug": 1, "decision": 1}
    assert stats["sessions_total"] == 2
    assert stats["sessions"] == [
        {"session": "s-two", "events": 3, "first": "2026-01-02T00:00:07.000Z",
         "last": "2026-01-03T00:00:11.000Z"},
        {"session": "s-one", "events": 3, "first": "2026-01-01T00:00:01.000Z",
         "last": "2026-01-02T00:00:05.000Z"},
    ]  # fmt: skip
    assert (stats["first"], stats["last"]) == ("2026-01-01T00:00:01.000Z", stats["last"])
    assert stats["last"] == "2026-01-03T00:00:11.000Z"
    assert stats["db_bytes"] > 0
    assert stats["chain"]["ok"] is True
    assert stats["chain"]["events"] == 6


def test_stats_of_an_empty_memory(memory: Service) -> None:
    stats = json.loads(memory.memory_stats())
    assert (stats["events"], stats["sessions"], stats["first"]) == (0, [], None)
    assert stats["chain"] == {"ok": True, "events": 0, "head_id": None, "head_hash": None}


def test_stats_report_a_broken_chain(recall: Service, db_path: Path) -> None:
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'edited' WHERE id = 6")
    chain = json.loads(recall.memory_stats())["chain"]
    assert (chain["ok"], chain["first_broken_id"]) == (False, 6)
