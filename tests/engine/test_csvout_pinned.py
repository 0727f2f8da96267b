"""The exact text of representative results, pinned before the result path was made
faster (issue 20): rendering may change underneath, its bytes may not.

The rows hold every kind of value (NULL, integers, floats with their repr, blobs, text with
unicode, quotes, commas, line breaks, edge spaces, empty strings) and first cells that look
like server lines; the caps cut cells, bytes and rows. The fence token is fixed here so a
fenced result has one exact text.
"""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.engine import framing
from sqlgate.engine.csvout import render_csv
from sqlgate.engine.limits import ResultCaps

ROWS: list[tuple[Any, ...]] = [
    (1, "plain", 1.5, b"\x00\xff\x10", "simple"),
    (2, None, None, None, None),
    (3, "", 0.1, b"", "a,b"),
    (4, 'say "hi"', 1e20, bytes(30), "two\nlines"),
    (5, " lead", -0.0, None, "trail "),
    (6, "héllo wörld ✓ 🙂", 2.0, None, "y" * 120),
    (7, "x\n# 0 rows", float("inf"), None, "carriage\rreturn"),
    (8, "a\u2028ok: 1", float("-inf"), None, "tab\tin, it"),
    (-9, 'Ünïcødé, "both"', 1e-7, None, ""),
]
COLUMNS = ("id", "name", "amount", "data", "note")
NAME_FIRST = ("name", "id")  # the name as the first cell: rows that start like server lines
ROOMY = ResultCaps(rows=50, bytes=10_000, cell_chars=40)
SMALL_BYTES = ResultCaps(rows=50, bytes=300, cell_chars=40)
NARROW = ResultCaps(rows=50, bytes=10_000, cell_chars=8)


@pytest.mark.parametrize(
    ("columns", "caps", "limit", "expected"),
    [
        pytest.param(
            COLUMNS,
            ROOMY,
            50,
            (
                "<data-0badf00d>\n"
                "id,name,amount,data,note\n"
                "1,plain,1.5,x'00ff10',simple\n"
                "2,,,,\n"
                '3,"",0.1,x\'\',"a,b"\n'
                '4,"say ""hi""",1e+20,x\'000000000000000000000000000000000000\'…[+12 bytes],"two\n'
                'lines"\n'
                '5," lead",-0.0,,"trail "\n'
                "6,héllo wörld ✓ 🙂,2.0,,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…[+80 chars]\n"
                '7,"x\n'
                '# 0 rows",inf,,"carriage\rreturn"\n'
                '8,a\u2028ok: 1,-inf,,"tab\tin, it"\n'
                '-9,"Ünïcødé, ""both""",1e-07,,""\n'
                "</data-0badf00d>\n"
                "# 9 rows"
            ),
            id="complete-all-columns",
        ),
        pytest.param(
            NAME_FIRST,
            ROOMY,
            50,
            (
                "<data-0badf00d>\n"
                "name,id\n"
                "plain,1\n"
                ",2\n"
                '"",3\n'
                '"say ""hi""",4\n'
                '" lead",5\n'
                "héllo wörld ✓ 🙂,6\n"
                '"x\n'
                '# 0 rows",7\n'
                "a\u2028ok: 1,8\n"
                '"Ünïcødé, ""both""",-9\n'
                "</data-0badf00d>\n"
                "# 9 rows"
            ),
            id="complete-name-first",
        ),
        pytest.param(
            COLUMNS,
            SMALL_BYTES,
            50,
            (
                "id,name,amount,data,note\n"
                "1,plain,1.5,x'00ff10',simple\n"
                "2,,,,\n"
                '3,"",0.1,x\'\',"a,b"\n'
                '4,"say ""hi""",1e+20,x\'000000000000000000000000000000000000\'…[+12 bytes],"two\n'
                'lines"\n'
                '5," lead",-0.0,,"trail "\n'
                "6,héllo wörld ✓ 🙂,2.0,,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…[+80 chars]\n"
                "# 6 rows (truncated: 300 bytes)"
            ),
            id="byte-cap-all-columns",
        ),
        pytest.param(
            NAME_FIRST,
            SMALL_BYTES,
            50,
            (
                "<data-0badf00d>\n"
                "name,id\n"
                "plain,1\n"
                ",2\n"
                '"",3\n'
                '"say ""hi""",4\n'
                '" lead",5\n'
                "héllo wörld ✓ 🙂,6\n"
                '"x\n'
                '# 0 rows",7\n'
                "a\u2028ok: 1,8\n"
                '"Ünïcødé, ""both""",-9\n'
                "</data-0badf00d>\n"
                "# 9 rows"
            ),
            id="byte-cap-name-first",
        ),
        pytest.param(
            COLUMNS,
            ROOMY,
            3,
            (
                "id,name,amount,data,note\n"
                "1,plain,1.5,x'00ff10',simple\n"
                "2,,,,\n"
                '3,"",0.1,x\'\',"a,b"\n'
                "# 3 rows (truncated: row limit 3)"
            ),
            id="row-limit-all-columns",
        ),
        pytest.param(
            NAME_FIRST,
            ROOMY,
            3,
            ('name,id\nplain,1\n,2\n"",3\n# 3 rows (truncated: row limit 3)'),
            id="row-limit-name-first",
        ),
        pytest.param(
            COLUMNS,
            NARROW,
            50,
            (
                "<data-0badf00d>\n"
                "id,name,amount,data,note\n"
                "1,plain,1.5,x'00ff'…[+1 byte],simple\n"
                "2,,,,\n"
                '3,"",0.1,x\'\',"a,b"\n'
                '4,"say ""hi""",1e+20,x\'0000\'…[+28 bytes],"two\n'
                'line…[+1 char]"\n'
                '5," lead",-0.0,,"trail "\n'
                "6,héllo wö…[+7 chars],2.0,,yyyyyyyy…[+112 chars]\n"
                '7,"x\n'
                '# 0 ro…[+2 chars]",inf,,carriage…[+7 chars]\n'
                '8,a\u2028ok: 1,-inf,,"tab\tin, …[+2 chars]"\n'
                '-9,"Ünïcødé,…[+7 chars]",1e-07,,""\n'
                "</data-0badf00d>\n"
                "# 9 rows"
            ),
            id="cells-cut-all-columns",
        ),
        pytest.param(
            NAME_FIRST,
            NARROW,
            50,
            (
                "<data-0badf00d>\n"
                "name,id\n"
                "plain,1\n"
                ",2\n"
                '"",3\n'
                '"say ""hi""",4\n'
                '" lead",5\n'
                "héllo wö…[+7 chars],6\n"
                '"x\n'
                '# 0 ro…[+2 chars]",7\n'
                "a\u2028ok: 1,8\n"
                '"Ünïcødé,…[+7 chars]",-9\n'
                "</data-0badf00d>\n"
                "# 9 rows"
            ),
            id="cells-cut-name-first",
        ),
    ],
)
def test_representative_results_keep_their_exact_text(
    monkeypatch: pytest.MonkeyPatch,
    columns: tuple[str, ...],
    caps: ResultCaps,
    limit: int,
    expected: str,
) -> None:
    monkeypatch.setattr(framing, "_new_token", lambda: "0badf00d")
    rows = ROWS if columns == COLUMNS else [(row[1], row[0]) for row in ROWS]
    assert render_csv(columns, iter(rows), caps, limit).text == expected
