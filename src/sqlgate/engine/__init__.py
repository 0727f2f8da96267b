"""SQLite only: the rooms of the engine, each a package with a front door (its `__init__`,
made with `engine.front_door`).

    statements   reading one statement and judging it by the tier policy
    rules        the user's table rules: hidden columns, protected and append-only tables
    records      the audit log, callers, members and database ids
    database     the database file: whose it is, its connections, what is in it
    snapshots    whole-file snapshots and restoring a file from one
    undo         row-level undo: capture and restore
    running      running statements for the tools and shaping their answers

The modules left here (names, sqltext, framing, schema, connect, ...) are used by several
packages. The map, and which package imports which: CONTRIBUTING.md, "Where the code lives".
"""
