"""A regular expression match (PostgreSQL's `~`, MySQL's REGEXP, DuckDB's regexp_matches) as
SQLite's GLOB, for the patterns GLOB can say.

SQLite has no REGEXP function on agent connections (none is registered: a view using it
would break in the application's own connections). GLOB matches a whole text with `*`, `?`
and `[...]`; a regular expression searches, so an unanchored end becomes `*`. What GLOB
cannot say (`+`, `?`, `{n}`, `|`, groups, `\\w`) is no rewrite. A case-insensitive match
(`~*`, and MySQL's REGEXP under its usual collation) compares lower() with a lower-cased
pattern, which folds ASCII letters only.
"""

from __future__ import annotations

from sqlglot import exp

from sqlgate.engine.dialects.trees import NoRewrite, Notes, call, string

__all__ = ["glob_of", "regex_match"]

_GLOB_SPECIAL = set("*?[]")
_ESCAPES = {"d": "[0-9]", ".": "[.]", "-": "-", "/": "/", "\\": "\\", "$": "$", "^": "^",
            "(": "(", ")": ")", "+": "+", "|": "|", "{": "{", "}": "}", "*": "[*]",
            "?": "[?]", "[": "[[]"}  # fmt: skip


def _class(pattern: str, at: int) -> tuple[str, int]:
    """The bracket class starting at `pattern[at]` ('['), as GLOB writes it, and where it
    ends."""
    end = pattern.find("]", at + 2 if pattern[at + 1 : at + 2] in ("^", "]") else at + 1)
    if end < 0:
        raise NoRewrite("an unclosed [")
    body = pattern[at + 1 : end]
    if "\\" in body or "[:" in body:
        raise NoRewrite("a class GLOB cannot say")
    return "[" + body + "]", end + 1


def glob_of(pattern: str) -> str:
    """The GLOB pattern matching what the regular expression `pattern` finds; NoRewrite
    for one GLOB cannot say."""
    text = pattern
    anchored_start = text.startswith("^")
    anchored_end = text.endswith("$") and not text.endswith("\\$")
    text = text[1 if anchored_start else 0 : len(text) - 1 if anchored_end else len(text)]
    out: list[str] = [] if anchored_start else ["*"]
    at = 0
    while at < len(text):
        char = text[at]
        if char == "\\":
            escaped = text[at + 1 : at + 2]
            if escaped not in _ESCAPES:
                raise NoRewrite(f"\\{escaped}")
            out.append(_ESCAPES[escaped])
            at += 2
        elif text.startswith(".*", at):
            out.append("*")
            at += 2
        elif char == ".":
            out.append("?")
            at += 1
        elif char == "[":
            part, at = _class(text, at)
            out.append(part)
        elif char in "+?{}()|^$*":
            raise NoRewrite(f"regular expression {char}")
        elif char in _GLOB_SPECIAL:
            raise NoRewrite(char)
        else:
            out.append(char)
            at += 1
    if not anchored_end:
        out.append("*")
    glob = "".join(out)
    while "**" in glob:
        glob = glob.replace("**", "*")
    return glob


def regex_match(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """`x ~ 'p'` (REGEXP, regexp_matches) as `x GLOB '...'`; `~*` and MySQL's REGEXP
    compare lower-cased."""
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise NoRewrite("a pattern that is not a string")
    if node.args.get("flag") is not None:
        raise NoRewrite("regular expression flags")
    folded = isinstance(node, exp.RegexpILike) or dialect == "mysql"
    glob = glob_of(str(pattern.this))
    subject = node.this
    if folded:
        glob, subject = glob.lower(), call("lower", subject)
        notes.append("GLOB matches the whole text; the match ignores case for ASCII only")
    else:
        notes.append("GLOB matches the whole text, with case")
    return exp.Glob(this=subject, expression=string(glob))
