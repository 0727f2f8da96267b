"""Durability beyond one machine: Litestream beside the server, the witness replicated with
the database, and a restore that says what it can prove. See docs/decisions.md."""
