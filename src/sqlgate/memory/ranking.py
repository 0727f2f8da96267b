"""How memory_search turns a question into terms and ranks what matched.

Agents ask in plain questions ("When did Caroline go to the support group?"), so the
question's function words (`when`, `did`, `the`, `to`) are dropped before the words are
OR-ed for BM25: they match nearly every event and only add noise to the ranking. A query
made of such words only keeps them all (searching "the" still finds "the").

What an agent means is often spread over adjacent events (a question, then its answer),
so each matched event also earns a share of its neighbours' BM25 scores
(`with_neighbours`): the matched events just before and after it in the same session.
Tuned on LoCoMo conversations 0-6 (bench/results.md); the tried and dropped ideas are in
docs/decisions.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "NEIGHBOUR_WEIGHT",
    "STOP_WORDS",
    "query_words",
    "with_neighbours",
]

NEIGHBOUR_WEIGHT = 0.3  # share of each adjacent event's score an event earns
MAX_WORDS = 32
_WORD = re.compile(r"\w+(\*?)", re.UNICODE)

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
    weight: float = NEIGHBOUR_WEIGHT,
) -> dict[int, float]:
    """Each matched event's score plus `weight` times the scores of the matched events
    beside it (id - 1 and id + 1) in the same session.

    `scores` holds the matched events' BM25 scores (higher is better); `sessions` names the
    session of each of them.
    """
    ranked: dict[int, float] = {}
    for event_id, score in scores.items():
        session = sessions[event_id]
        for beside in (event_id - 1, event_id + 1):
            if beside in scores and sessions[beside] == session:
                score += weight * scores[beside]
        ranked[event_id] = score
    return ranked
