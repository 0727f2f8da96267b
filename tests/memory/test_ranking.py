"""The ranking pieces of memory_search on small fixtures: which words a question searches
for, and how neighbours share their scores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.memory.ranking import (
    LABEL_BOOST,
    MAX_WORDS,
    NEIGHBOUR_WEIGHTS,
    STOP_WORDS,
    TIME_BOOST,
    Candidate,
    asks_when,
    label,
    query_words,
    rank,
    says_when,
    with_neighbours,
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param(
            "When did Caroline go to the LGBTQ support group?",
            ["Caroline", "go", "LGBTQ", "support", "group"],
            id="question",
        ),
        pytest.param(
            "What's Melanie's favourite book?", ["Melanie", "favourite", "book"], id="apostrophes"
        ),
        pytest.param("WHO IS THE DEPLOY OWNER", ["DEPLOY", "OWNER"], id="any-case"),
        pytest.param("to be or not to be", ["to", "be", "or", "not"], id="only-stop-words"),
        pytest.param("deploy* the*", ["deploy*", "the*"], id="prefixes-kept"),
    ],
)
def test_query_words_drop_a_questions_function_words(text: str, words: list[str]) -> None:
    assert [word + ("*" if prefix else "") for word, prefix in query_words(text)] == words


def test_query_words_keep_at_most_max_words() -> None:
    assert len(query_words(" ".join(f"w{n}" for n in range(MAX_WORDS + 8)))) == MAX_WORDS


@given(st.text())
def test_query_words_are_words_of_the_text_once_each(text: str) -> None:
    words = query_words(text)
    assert len(words) == len(set(words))
    assert all(word in text for word, _ in words)
    if any(not prefix and word.lower() not in STOP_WORDS for word, prefix in words):
        assert not any(not prefix and word.lower() in STOP_WORDS for word, prefix in words)


def test_a_matched_neighbour_in_the_same_session_adds_its_share() -> None:
    scores = {1: 1.0, 2: 4.0, 3: 2.0, 7: 5.0}
    sessions = {1: "a", 2: "a", 3: "a", 7: "a"}
    assert with_neighbours(scores, sessions, weights=(0.5, 0.25)) == {
        1: 1.0 + 0.5 * 4.0 + 0.25 * 2.0,
        2: 4.0 + 0.5 * (1.0 + 2.0),
        3: 2.0 + 0.5 * 4.0 + 0.25 * 1.0,
        7: 5.0,  # 5, 6, 8 and 9 did not match
    }


def test_a_neighbour_in_another_session_adds_nothing() -> None:
    scores = {4: 1.0, 5: 3.0, 6: 2.0}
    sessions = {4: "a", 5: "b", 6: "b"}
    assert with_neighbours(scores, sessions, weights=(0.5,)) == {4: 1.0, 5: 4.0, 6: 3.5}


def test_the_answer_beside_a_matching_question_outranks_a_lone_match() -> None:
    # 10 asks ("where is the zebra?"), 11 answers with fewer of the words; 20 matches alone
    scores = {10: 3.0, 11: 2.0, 20: 2.5}
    ranked = with_neighbours(scores, dict.fromkeys(scores, "s"))
    assert sorted(ranked, key=ranked.__getitem__, reverse=True) == [10, 11, 20]


@given(
    st.dictionaries(st.integers(1, 40), st.floats(0.01, 100.0), max_size=30),
    st.lists(st.floats(0.0, 1.0), max_size=3),
)
def test_neighbours_only_raise_scores_and_rank_the_matched_events(
    scores: dict[int, float], weights: list[float]
) -> None:
    sessions = {event_id: "ab"[event_id % 3 == 0] for event_id in scores}
    ranked = with_neighbours(scores, sessions, weights)
    assert set(ranked) == set(scores)
    assert all(ranked[event_id] >= scores[event_id] for event_id in scores)
    reach = range(1, len(weights) + 1)
    lone = [e for e in scores if not any(e + d in scores or e - d in scores for d in reach)]
    assert all(ranked[event_id] == scores[event_id] for event_id in lone)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            "[1:56 pm on 8 May, 2023] Caroline: I went", "caroline", id="stamp-then-label"
        ),
        pytest.param("decision: use postgres", "decision", id="label"),
        pytest.param("  User: deploy it", "user", id="leading-space"),
        pytest.param("deploy the service: done", None, id="a-colon-later-is-no-label"),
        pytest.param("[stamp] two words: x", None, id="two-words"),
        pytest.param("[unclosed Caroline: x", None, id="unclosed-stamp"),
        pytest.param("", None, id="empty"),
    ],
)
def test_label_is_the_word_before_the_opening_colon(content: str, expected: str | None) -> None:
    assert label(content) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When did Caroline go to the LGBTQ support group?", True),
        ("  when was the deploy", True),
        ("How long has Nate had turtles?", True),
        ("What did Caroline paint?", False),
        ("Whenever I deploy, what breaks?", False),
    ],
)
def test_asks_when(question: str, expected: bool) -> None:
    assert asks_when(question) is expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[8 May, 2023] Caroline: I went to the group yesterday.", True),
        ("Nate: two days AGO I won", True),
        ("deploy done on Friday", True),
        ("[Monday] Caroline: I went to the group.", False),  # the stamp is not the text
        ("Caroline: lastly, the group", False),  # whole words only
    ],
)
def test_says_when_looks_past_the_stamp(content: str, expected: bool) -> None:
    assert says_when(content) is expected


def candidate(event_id: int, score: float, head: str, session: str = "s") -> Candidate:
    return Candidate(event_id, score, session, head)


def test_an_event_labelled_with_a_word_of_the_question_counts_double() -> None:
    ranked = rank(
        "What did Caroline paint?",
        [candidate(1, 3.0, "Melanie: Caroline paints"), candidate(5, 2.0, "Caroline: I paint")],
    )
    assert ranked == {1: 3.0, 5: 2.0 * (1 + LABEL_BOOST)}


def test_a_question_that_asks_when_prefers_events_that_say_when() -> None:
    events = [candidate(1, 2.0, "Ann: I went to the zoo"), candidate(5, 1.8, "Bob: zoo yesterday")]
    assert rank("When did they go to the zoo?", events) == {1: 2.0, 5: 1.8 * (1 + TIME_BOOST)}
    assert rank("Who went to the zoo?", events) == {1: 2.0, 5: 1.8}


def test_rank_adds_the_neighbours_share_before_the_label() -> None:
    ranked = rank(
        "What did Ann say about zebras?",
        [candidate(1, 2.0, "Bob: do you like zebras?"), candidate(2, 1.0, "Ann: yes")],
    )
    assert ranked == {
        1: 2.0 + NEIGHBOUR_WEIGHTS[0] * 1.0,
        2: (1.0 + NEIGHBOUR_WEIGHTS[0] * 2.0) * (1 + LABEL_BOOST),
    }
