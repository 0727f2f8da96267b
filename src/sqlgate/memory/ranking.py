"""How memory_search turns a question into terms and ranks what matched.

Agents ask in plain questions ("When did Caroline go to the support group?"), so the
question's function words (`when`, `did`, `the`, `to`) are dropped before the words are
OR-ed for BM25: they match nearly every event and only add noise to the ranking. A query
made of such words only keeps them all (searching "the" still finds "the").

Then three adjustments, in this order (`rank`):

- What an agent means is often spread over adjacent events (a question, then its answer),
  so each matched event earns a share of its neighbours' BM25 scores (`with_neighbours`):
  half the score of a matched event just before or after it in the same session, a quarter
  of one two places away.
- An event that opens with a label (`Caroline: ...`, `[date] user: ...`, `decision: ...`)
  naming a word of the question is by or about what the question asks: it counts double.
- A question that asks when (`when ...`, `how long ...`) prefers events that say when
  (`yesterday`, `last week`, `two days ago`, a weekday).

Tuned on LoCoMo conversations 0-6 (bench/results.md); docs/decisions.md lists what was
tried and dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "LABEL_BOOST",
    "NEIGHBOUR_WEIGHTS",
    "STOP_WORDS",
    "TIME_BOOST",
    "TIME_REACH",
    "Candidate",
    "asks_when",
    "label",
    "query_words",
    "rank",
    "says_when",
    "with_neighbours",
]

NEIGHBOUR_WEIGHTS = (0.5, 0.25)  # share of a matched event's score earned 1 and 2 places away
LABEL_BOOST = 1.0  # an event labelled with a word of the question scores (1 + this) times
TIME_BOOST = 0.3  # for a question that asks when: an event that says when
TIME_REACH = 50  # best-scored events the time adjustment looks at
MAX_WORDS = 32
_WORD = re.compile(r"\w+(\*?)", re.UNICODE)
# an optional leading [bracketed stamp], then a one-word label and a colon
_LABEL = re.compile(r"\s*(?:\[[^\]\n]{0,80}\]\s*)?(\w{1,40}):", re.UNICODE)
_ASKS_WHEN = re.compile(r"\s*(?:when\b|how\s+long\b)", re.IGNORECASE)
_SAYS_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|recently|weekend|week|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|evening|night)\b"
)


class Candidate(NamedTuple):
    """A matched event as ranking sees it: its BM25 score (higher is better), its session
    and the start of its content. A tuple: a search builds up to 500 of them."""

    id: int
    score: float
    session: str
    head: str


# English function words and the words that make a question a question; compared in lower
# case, apostrophes removed (`don't` is `dont`, and its `t` is dropped too).
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can cannot could did do does doing down during
    each few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just kind kinds let likely many me might more most
    much my myself no nor not of off on once only or other ought our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there
    these they this those through to too type types under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve dont doesnt didnt isnt arent wasnt werent hasnt havent hadnt wont
    wouldnt shouldnt couldnt cant
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def query_words(text: str) -> list[tuple[str, bool]]:
    """The words to search for, in order, each once, with whether it ends in `*` (prefix).

    Stop words are left out unless every word is one; at most MAX_WORDS words.
    """
    words: list[tuple[str, bool]] = []
    for match in _WORD.finditer(text):
        word = (match.group(0).rstrip("*"), bool(match.group(1)))
        if word not in words:
            words.append(word)
    content = [word for word in words if not _is_stop(word)]
    return (content or words)[:MAX_WORDS]


def _is_stop(word: tuple[str, bool]) -> bool:
    text, prefix = word
    return not prefix and text.lower().replace("'", "") in STOP_WORDS


def with_neighbours(
    scores: Mapping[int, float],
    sessions: Mapping[int, str],
    weights: Sequence[float] = NEIGHBOUR_WEIGHTS,
) -> dict[int, float]:
    """Each matched event's score plus `weights[d - 1]` times the score of each matched event
    d places away (id - d and id + d) in the same session.

    `scores` holds the matched events' BM25 scores (higher is better); `sessions` names the
    session of each of them.
    """
    # the same additions in the same order as the plain loop (id - d, then id + d, for each
    # d), so the same floats; the lookups bound once: 500 candidates are ranked per search
    reach = tuple(enumerate(weights, start=1))
    score_of, session_of = scores.get, sessions.get
    ranked: dict[int, float] = {}
    for event_id, score in scores.items():
        session = sessions[event_id]
        for distance, weight in reach:
            before = score_of(event_id - distance)
            if before is not None and session_of(event_id - distance) == session:
                score += weight * before
            after = score_of(event_id + distance)
            if after is not None and session_of(event_id + distance) == session:
                score += weight * after
        ranked[event_id] = score
    return ranked


def label(content: str) -> str | None:
    """The one-word label an event's content opens with (after an optional [stamp]), folded
    to lower case: `caroline` for "[1:56 pm on 8 May, 2023] Caroline: ...", else None."""
    found = _LABEL.match(content)
    return found.group(1).lower() if found else None


def asks_when(question: str) -> bool:
    """Whether the question asks for a time (`When ...?`, `How long ...?`)."""
    return _ASKS_WHEN.match(question) is not None


def says_when(content: str) -> bool:
    """Whether the content (past an opening [stamp]) names a time: `yesterday`, `last week`,
    `ago`, a weekday..."""
    found = _LABEL.match(content)
    start = found.start(1) if found else 0
    return _SAYS_WHEN.search(content[start:].lower()) is not None


def rank(question: str, candidates: Sequence[Candidate]) -> dict[int, float]:
    """The final score of each candidate: BM25, the neighbours' share, then the label and
    time adjustments (see the module's docstring)."""
    scores = with_neighbours(
        {c.id: c.score for c in candidates}, {c.id: c.session for c in candidates}
    )
    asked = {word.lower() for word, _ in query_words(question)}
    heads = {c.id: c.head for c in candidates}
    for c in candidates:
        if label(c.head) in asked:
            scores[c.id] *= 1 + LABEL_BOOST
    if asks_when(question):
        # a nudge that reorders the best only: the time words are looked for in TIME_REACH
        for event_id in sorted(scores, key=scores.__getitem__, reverse=True)[:TIME_REACH]:
            if says_when(heads[event_id]):
                scores[event_id] *= 1 + TIME_BOOST
    return scores
