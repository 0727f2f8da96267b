"""The local web console (`sqlgate ui`): server-rendered, read-only pages over one database.

serve.py        the `ui` command: host/token rules, listen, run uvicorn
access.py       the gate: token -> cookie exchange, Host check, security headers
app.py          routes and static files (static/: one CSS file, one small script)
console.py      the read-only Service the pages share; the chain's status in background
summary.py      calls per hour, query_patterns, sessions: read once, then folded in by id
activity.py     audit log, calls per hour, query_errors, query_patterns
destructive.py  destructive calls and their undo state; snapshots
memory.py       chain status, sessions, search, events
claims.py       claims, confidence curves, contradictions
tables.py       the agent's tables and a capped page of rows
layout.py       the page shell and building blocks; html.py escapes; svg.py draws
"""
