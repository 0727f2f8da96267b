"""Progressive disclosure over the event log: search, then timeline, then details.

`memory_search` returns a compact, ranked index (a one-line preview per event), the
timeline shows an event's neighbours, and only `memory_details` returns full text, so the
agent pays tokens for what it picks. Every query here is the server's own SQL with values
bound; the agent's words become a safe FTS5 expression (`fts_query`).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.csvout import csv_line, csv_reply
from sqlgate.engine.database import Database
from sqlgate.engine.framing import LINE_BREAKS, FramedReply, counted, data_bytes, inline
from sqlgate.errors import InvalidArgument, NotFound

__all__ = ["EventReader", "SearchFilters", "fts_query", "preview", "shown_scores"]

PREVIEW_CHARS = 100
MAX_TOP_K = 50
MAX_WINDOW = 20
RANK_WINDOW = 5000  # matching events memory_search ranks: the newest
CANDIDATES = 500  # best BM25 matches of the window that ranking.rank scores again
HEAD_CHARS = 1000  # of each candidate's content, for its label and time words


def fts_query(text: object) -> str:
    """The agent's words as an FTS5 query that cannot be a syntax error.

    Each word is quoted (so `AND`, `NEAR`, `:` , `(` or `"` in the input are plain text);
    a trailing `*` keeps prefix search; a question's function words are dropped
    (`ranking.query_words`); the rest are OR-ed and BM25 ranks events that match more of
    them, and rarer ones, first.
    """
    if not isinstance(text, str):
        raise InvalidArgument("query must be text: a few words to look for")
    from sqlgate.memory.ranking import query_words  # not for the resume context's previews

    terms = [f'"{word}"' + ("*" if prefix else "") for word, prefix in query_words(text)]
    if not terms:
        raise InvalidArgument("query has no words to search for; pass a few plain words")
    return " OR ".join(terms)


def preview(content: str, limit: int = PREVIEW_CHARS) -> str:
    """The content on one line, cut to `limit` characters."""
    line = " ".join(content.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def shown_scores(scores: Sequence[float]) -> list[str]:
    """An answer's scores (best first) as the agent reads them: each divided by the best
    of this answer, with two decimals (`1.00`, `0.50`, `0.00`), never an exponent.

    Raw scores have no scale (BM25 gives a word found in most events 1e-06, and neighbours
    and labels add to it), so one answer showed 0.797 beside 1.89e-06. Dividing by the best
    keeps the order (the rows are sorted by score) and says how close each row came.
    """
    best = max(scores, default=0.0)
    if best <= 0:
        return ["0.00" for _ in scores]
    return [f"{min(1.0, max(0.0, score / best)):.2f}" for score in scores]


def _best_matches_sql(extra: str) -> str:
    """The best CANDIDATES matching events (id, BM25 score, session, start of the text) of
    the newest RANK_WINDOW, each with how many matched; `extra` is the filters' condition.

    BM25 has no early exit: ranking every match costs O(matches), which for a common word
    grows with the chain. So only the newest RANK_WINDOW matching events (fts5 walks its
    doclists in rowid order, so that costs O(window)) are ranked, and only the top_k of them
    are fetched from the table.
    """
    if extra:
        window = (
            "SELECT memory_events_fts.rowid AS id, memory_events_fts.rank AS r "
            "FROM memory_events_fts JOIN memory_events AS e "
            "ON e.id = memory_events_fts.rowid "
            f"WHERE memory_events_fts MATCH ?{extra} "
            "ORDER BY memory_events_fts.rowid DESC LIMIT ?"
        )
    else:
        window = (
            "SELECT rowid AS id, rank AS r FROM memory_events_fts "
            "WHERE memory_events_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
        )
    # The best CANDIDATES of the window by BM25 (fts5's rank is negative: lower is better)
    # with their sessions and the start of their text, and how many matched; ranking.rank
    # adjusts their scores (neighbours, labels, time) and only the top_k are fetched.
    return (
        f"WITH hit AS MATERIALIZED ({window}), "
        "best AS MATERIALIZED (SELECT id, r FROM hit ORDER BY r LIMIT ?) "
        "SELECT best.id, -best.r, e.session, substr(e.content, 1, ?), "
        "(SELECT count(*) FROM hit) "
        "FROM best JOIN memory_events AS e ON e.id = best.id ORDER BY best.r"
    )


def _short_time(ts: str) -> str:
    return ts[:16].replace("T", " ")


def _tags(raw: str) -> str:
    try:
        return " ".join(json.loads(raw))
    except (ValueError, TypeError):
        return ""


@dataclass(frozen=True)
class SearchFilters:
    kind: str | None = None
    session: str | None = None
    tags: tuple[str, ...] = ()
    since: str | None = None  # stored timestamp text, inclusive
    until: str | None = None  # stored timestamp text, exclusive

    def where(self) -> tuple[str, list[Any]]:
        """Fixed SQL fragments, one per filter given, and their bound values."""
        clauses: list[str] = []
        values: list[Any] = []
        for column, value in (("e.kind", self.kind), ("e.session", self.session)):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        if self.since is not None:
            clauses.append("e.ts >= ?")
            values.append(self.since)
        if self.until is not None:
            clauses.append("e.ts < ?")
            values.append(self.until)
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(e.tags) WHERE value = ?)")
            values.append(tag)
        return "".join(f" AND {clause}" for clause in clauses), values


class EventReader:
    """Read-side of the memory: search, timeline, details, stats."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.cell_chars = db.settings.max_cell_chars
        self.result_bytes = db.settings.max_result_bytes

    def search(self, query: str, top_k: int, filters: SearchFilters) -> tuple[str, int]:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidArgument(f"top_k must be a whole number from 1 to {MAX_TOP_K}")
        match = fts_query(query)
        extra, values = filters.where()
        sql = _best_matches_sql(extra)
        from sqlgate.memory.ranking import Candidate, rank

        with self.db.reading_records() as conn:
            best = list(conn.execute(sql, (match, *values, RANK_WINDOW, CANDIDATES, HEAD_CHARS)))
            matched = int(best[0][4]) if best else 0
            ranked = rank(
                query,
                [Candidate(int(i), float(score), str(s), str(h)) for i, score, s, h, _ in best],
            )
            # the best top_k, a higher score first, then a newer id: (score, id) pairs compared
            # as they are, with no key function called for each of 500 candidates
            pairs = ((score, event_id) for event_id, score in ranked.items())
            chosen = [event_id for _, event_id in heapq.nlargest(top_k, pairs)]
            fetched = {
                int(row[0]): row
                for row in conn.execute(
                    "SELECT id, kind, ts, tags, content FROM memory_events "
                    "WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(chosen),),
                )
            }
        rows = [(*fetched[event_id], ranked[event_id]) for event_id in chosen]
        return self._search_reply(rows, matched), len(rows)

    def _search_reply(self, rows: list[tuple[Any, ...]], matched: int) -> str:
        """The ranked index: one line per event (id, score, kind, date, tags, preview), and
        the next steps, or what to try when nothing matched."""
        lines = [csv_line(("id", "score", "kind", "date", "tags", "preview"), self.cell_chars)]
        shown = shown_scores([row[-1] for row in rows])
        for (event_id, kind, ts, tags, content, _), score in zip(rows, shown, strict=True):
            shown_tags = _tags(tags) or None
            cells = (event_id, score, kind, _short_time(ts), shown_tags, preview(content))
            lines.append(csv_line(cells, self.cell_chars))
        ids = ", ".join(str(row[0]) for row in rows)
        if rows:
            trailer = (
                f"# {counted(len(rows), 'result')}; next: memory_timeline(ids=[{ids}]) for what "
                f"happened around them, memory_details(ids=[{ids}]) for full text"
            )
            if matched >= RANK_WINDOW:
                trailer += (
                    f"\n# ranked the newest {counted(RANK_WINDOW, 'matching event')} only; older "
                    "ones may match too: add words, filters or until= to reach them"
                )
        else:
            trailer = "# 0 results; try other words, fewer filters, or a prefix like deploy*"
        return csv_reply(lines, trailer)

    def timeline(self, ids: Sequence[int], window: int) -> tuple[str, int]:
        if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= MAX_WINDOW:
            raise InvalidArgument(f"window must be a whole number from 0 to {MAX_WINDOW}")
        with self.db.reading_records() as conn:
            self._require(conn, ids)
            wanted: set[int] = set()
            for event_id in ids:
                wanted.update(range(max(1, event_id - window), event_id + window + 1))
            rows = [
                row
                for low, high in _ranges(sorted(wanted))
                for row in conn.execute(
                    "SELECT id, ts, kind, content FROM memory_events "
                    "WHERE id BETWEEN ? AND ? ORDER BY id",
                    (low, high),
                )
            ]
        lines = [csv_line(("id", "date", "kind", "preview", "asked"), self.cell_chars)]
        used = len(lines[0].encode())
        for event_id, ts, kind, content in rows:
            asked = "*" if event_id in ids else None
            line = csv_line(
                (event_id, _short_time(ts), kind, preview(content), asked), self.cell_chars
            )
            if used + len(line.encode()) > self.result_bytes:
                break
            lines.append(line)
            used += len(line.encode())
        shown = len(lines) - 1
        trailer = (
            f"# {counted(shown, 'event')} around {len(ids)} asked (*); memory_details for full text"
        )
        if shown < len(rows):
            trailer += (
                f" (truncated: {counted(self.result_bytes, 'byte')}; ask for fewer ids or a "
                "smaller window)"
            )
        return csv_reply(lines, trailer), shown

    def details(self, ids: Sequence[int]) -> tuple[str, int]:
        with self.db.reading_records() as conn:
            self._require(conn, ids)
            rows = {
                int(row[0]): row
                for row in conn.execute(
                    "SELECT id, ts, session, kind, content, tags, prev_hash, hash "
                    "FROM memory_events WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(ids)),),
                )
            }
        reply = FramedReply()
        used = 0
        shown = 0
        left: list[int] = []
        for event_id in ids:
            _, ts, session, kind, stored, tags, prev_hash, digest = rows[event_id]
            content = str(stored).rstrip(LINE_BREAKS)
            # stored fields stay one field each (inline), whatever a damaged row holds
            ts, kind, session, digest, prev_hash = (
                inline(str(field)) for field in (ts, kind, session, digest, prev_hash)
            )
            tag_words = " ".join(inline(tag) for tag in _tags(tags).split())
            header = (
                f"## event {event_id} · {ts} · {kind} · session {session}"
                f"{' · tags: ' + tag_words if tag_words else ''}\n"
                f"# hash {digest} · prev {prev_hash}"
            )
            # the header lines, the content, its line feed and the blank line between blocks
            size = len(header.encode()) + 1 + data_bytes(content) + (2 if shown else 0)
            # the first block always goes out whole: details is the one way to read it
            if shown and used + size > self.result_bytes:
                left.append(event_id)
                continue
            if shown:
                reply.server("")
            reply.server(header).data(content)
            used += size
            shown += 1
        if left:
            rest = ", ".join(map(str, left))
            reply.server(
                f"# truncated: {counted(self.result_bytes, 'byte')}; ask again for ids [{rest}]"
            )
        return reply.render(), shown

    def _require(self, conn: apsw.Connection, ids: Sequence[int]) -> None:
        known = {
            int(row[0])
            for row in conn.execute(
                "SELECT id FROM memory_events WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(ids)),),
            )
        }
        missing = [event_id for event_id in ids if event_id not in known]
        if missing:
            (head,) = _row(conn, "SELECT coalesce(max(id), 0) FROM memory_events")
            span = f"ids run from 1 to {head}" if head else "the memory is empty"
            raise NotFound(
                f"no event {', '.join(map(str, missing))}; {span}. memory_search finds ids"
            )

    def stats(self) -> dict[str, Any]:
        with self.db.reading_records() as conn:
            events, first, last = _row(conn, "SELECT count(*), min(ts), max(ts) FROM memory_events")
            kinds = dict(
                conn.execute(
                    "SELECT kind, count(*) FROM memory_events GROUP BY kind ORDER BY 2 DESC, 1"
                )
            )
            sessions = [
                {"session": s, "events": n, "first": f, "last": la}
                for s, n, f, la in conn.execute(
                    "SELECT session, count(*), min(ts), max(ts) FROM memory_events "
                    "GROUP BY session ORDER BY max(id) DESC LIMIT 20"
                )
            ]
            (session_count,) = _row(conn, "SELECT count(DISTINCT session) FROM memory_events")
            (checkpoints,) = _row(conn, "SELECT count(*) FROM memory_checkpoints")
            page_size = int(conn.pragma("page_size"))
            page_count = int(conn.pragma("page_count"))
        return {
            "events": events,
            "checkpoints": checkpoints,
            "kinds": kinds,
            "sessions_total": session_count,
            "sessions": sessions,
            "first": first,
            "last": last,
            "db_bytes": page_size * page_count,
        }


def _row(conn: apsw.Connection, sql: str) -> tuple[Any, ...]:
    """The one row an aggregate query returns."""
    return tuple(conn.execute(sql).fetchall()[0])


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted ids as (low, high) runs of consecutive numbers."""
    runs: list[tuple[int, int]] = []
    for event_id in ids:
        if runs and event_id == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], event_id)
        else:
            runs.append((event_id, event_id))
    return runs
