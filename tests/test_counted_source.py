"""No source text puts a number before a plural noun by hand: counts go through `counted`.

`framing.counted(n, "row")` says `1 row`, `0 rows`, `2 rows` (issue 30 §6: answers said
"1 rows"). Read from the source with `ast`, this finds what would say "1 rows" again:

- an f-string where a value is followed by a space and a plural word (`f"# {n} rows"`,
  `f"{n} more bad claims"`, `f"{n} row(s)"`), the words between them being adjectives, not
  a preposition or verb that ends the phrase (`f"{table} of its rows"` is not a count);
- a `%d`/`%s`/`{}` template doing the same (`log.info("%d audit row(s) ...", n)`);
- a hand-made plural: a conditional that chooses "s" or "" (`{'s' if n != 1 else ''}`), or
  two strings by a comparison with 1 (`"was" if n == 1 else "were"`).

A word counts as plural when it ends in "s" (or "(s)") and is not one of the verbs and small
words below, which follow a name (`f"{table} has"`). The few values followed by a plural word
that are not counts are listed in NOT_COUNTS with why; a listed entry that no longer occurs
fails too, so the list stays exact.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# words ending in "s" that end the phrase: verbs after a name, small words, units
NOT_NOUNS = frozenset(
    {
        *("is", "has", "was", "does", "says", "holds", "lacks", "needs", "gets", "runs"),
        *("shows", "looks", "takes", "serves", "publishes", "belongs", "contains", "depends"),
        *("differs", "exists", "rewrites", "hides", "its", "as", "this", "us", "yes", "s", "ms"),
        *("trusts", "distrusts", "shadows", "covers"),
    }
)
# words ending in "s" that may stand between a count and its noun
SINGULAR_WORDS = frozenset({"status"})
# a word that ends the phrase after a value: what follows is not the value's noun
LINKS = frozenset(
    {
        *("of", "in", "on", "to", "and", "or", "the", "a", "an", "by", "for", "from", "with"),
        *("at", "after", "before", "than", "per", "not", "no", "into", "over", "under", "if"),
        *("when", "while", "since", "until", "but", "that", "which", "who", "where", "must"),
        *("may", "can", "cannot", "will", "would", "could", "should", "be", "are"),
    }
)
PHRASE_END = re.compile(r"[,;:()\[\].!?\"'`=<>|{}/\n]")
# (file under src/sqlgate, the value's source, the plural word): why it is not a count
NOT_COUNTS = {
    ("engine/rules/guarded_policy.py", "op.action", "rows"): "a verb: `would delete rows of t`",
    (
        "engine/rules/guarded_policy.py",
        "rules.origin",
        "references",
    ): "a verb: `--policy references t`",
    ("engine/rules/hidden_checks.py", "name", "names"): "a verb: `index i names a hidden column`",
    (
        "engine/rules/hidden_checks.py",
        "name",
        "indexes",
    ): "a verb: `table t indexes a hidden column`",
    ("engine/rules/hidden_policy.py", "table", "indexes"): "a verb: `t indexes a column hidden by`",
    ("engine/rules/policy_file.py", "rule", "names"): "a verb: `[tables.t] hidden names no column`",
    (
        "engine/running/execute.py",
        "has",
        "params",
    ): "the argument's name: `...; params is an object`",
    ("engine/undo/checks.py", "self.key[0]", "row(s)"): "a table: `orders row(s) whose ...`",
    ("memory/privacy.py", "name", "matches"): "a verb: `pattern X matches empty text`",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    value: str
    word: str

    def __str__(self) -> str:
        return f"src/sqlgate/{self.path}:{self.line}: {{{self.value}}} {self.word}"


MAYBE_PLURAL = re.compile(r"\(s\)(?!:)")  # `row(s)`, not `http(s)://`


def plural_after(text: str) -> str | None:
    """The plural word that `text`, written right after a value, gives that value."""
    if not text.startswith(" "):
        return None
    phrase = PHRASE_END.split(MAYBE_PLURAL.sub("__s", text), maxsplit=1)[0]
    for word in phrase.split()[:4]:
        if word.endswith("__s"):
            return word.replace("__s", "(s)")
        folded = word.lower()
        if folded in LINKS or folded in NOT_NOUNS or word.isupper():  # SQL: `{t} VALUES`
            return None
        if folded.endswith("s") and folded.isalpha() and folded not in SINGULAR_WORDS:
            return word
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


TEMPLATE = re.compile(r"(%[ds]|\{[a-z_0-9]*\})")


def findings(name: str, source: str) -> Iterator[Finding]:
    """What in `source` (the module `name`, its path under src/sqlgate) counts by hand."""
    tree = ast.parse(source)
    in_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            in_fstrings.update(map(id, parts))
            for value, after in itertools.pairwise(parts):
                if isinstance(value, ast.FormattedValue) and isinstance(after, ast.Constant):
                    word = plural_after(str(after.value))
                    if word is not None:
                        yield Finding(name, value.lineno, ast.unparse(value.value), word)
        elif isinstance(node, ast.IfExp) and _hand_made_plural(node):
            yield Finding(name, node.lineno, ast.unparse(node), "(a hand-made plural)")
    skipped = in_fstrings | _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in skipped:
                continue
            for piece in TEMPLATE.split(node.value)[1:]:
                word = plural_after(piece) if not TEMPLATE.fullmatch(piece) else None
                if word is not None:
                    yield Finding(name, node.lineno, "template", word)


def _hand_made_plural(node: ast.IfExp) -> bool:
    branches = [node.body, node.orelse]
    if not all(isinstance(b, ast.Constant) and isinstance(b.value, str) for b in branches):
        return False
    texts = {str(b.value) for b in branches if isinstance(b, ast.Constant)}
    if texts & {"s", "es"}:
        return True
    test = node.test
    return isinstance(test, ast.Compare) and any(
        isinstance(c, ast.Constant) and c.value == 1 for c in [test.left, *test.comparators]
    )


def all_findings() -> list[Finding]:
    return [
        found
        for path in sorted(SRC.rglob("*.py"))
        for found in findings(
            path.relative_to(SRC / "sqlgate").as_posix(), path.read_text(encoding="utf-8")
        )
    ]


def test_no_source_text_counts_without_the_helper() -> None:
    found = [str(f) for f in all_findings() if (f.path, f.value, f.word) not in NOT_COUNTS]
    assert not found, "use framing.counted(n, noun) for these counts:\n" + "\n".join(found)


def test_every_listed_exception_still_occurs() -> None:
    seen = {(f.path, f.value, f.word) for f in all_findings()}
    assert sorted(set(NOT_COUNTS) - seen) == []


@pytest.mark.parametrize(
    ("text", "word"),
    [
        pytest.param(" rows", "rows", id="noun"),
        pytest.param(" rows affected", "rows", id="noun-then-verb"),
        pytest.param(" more bad claims (--json lists all)", "claims", id="adjectives"),
        pytest.param(" row(s) whose", "row(s)", id="maybe-plural"),
        pytest.param(" is hidden by rules", None, id="verb"),
        pytest.param(" of its rows", None, id="link"),
        pytest.param(" s budget", None, id="unit"),
        pytest.param(" row", None, id="singular"),
        pytest.param(", rows", None, id="punctuation"),
        pytest.param("rows", None, id="no-space"),
        pytest.param(" MiB (--undo-max-mb)", None, id="other-unit"),
    ],
)
def test_what_reads_as_a_plural_after_a_value(text: str, word: str | None) -> None:
    assert plural_after(text) == word


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        pytest.param('f"# {n} rows"', True, id="fstring"),
        pytest.param("f\"# {counted(n, 'row')}\"", False, id="helper"),
        pytest.param("f\"{n} item{'s' if n != 1 else ''}\"", True, id="conditional-s"),
        pytest.param('"was" if n == 1 else "were"', True, id="conditional-verb"),
        pytest.param("x if n == 1 else y", False, id="not-strings"),
        pytest.param('log.info("%d audit row(s) queued", n)', True, id="percent"),
        pytest.param('"{} rows".format(n)', True, id="format"),
        pytest.param('f"{table} has {n} columns"', True, id="inner"),
        pytest.param('f"{table} has no columns"', False, id="name-then-verb"),
    ],
)
def test_the_check_finds_hand_made_counts(source: str, flagged: bool) -> None:
    found = list(findings("probe.py", f"x = {source}\n"))
    assert bool(found) is flagged, found
