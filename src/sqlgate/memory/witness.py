"""The witness: the chain's head and last verified position, kept in a file of its own.

Someone with write access to the records file can rewrite history and recompute every
hash after it, and the chain alone would still verify. The witness remembers, outside the
records file, which event was the head (id and hash) and which position was last verified,
so such a rewrite shows up as a witnessed event that no longer matches. It is `witness.json`
in the database's records folder (`sqlgate.home.record_files(db).witness`), beside
`records.sqlite`, which holds the chain.

What it does not buy: someone who can write both files can rewrite both consistently.
Keep a copy of the witness elsewhere (or publish its head hash) to raise that bar.

A missing or unreadable witness cannot be told apart from a new database by the file
alone, so the chain decides: with no events it is a new database (fine); with events,
verification reports `witness mismatch` (first_broken_id null) until the next append,
which starts a new witness from the chain as it stands (trust on first use). An append
onto a chain that does not match an existing witness keeps the stale witnessed event as
the verified position, so the mismatch stays reported after the append. To accept a
chain as it stands (after a deliberate restore, say), delete the witness file.

The file is replaced atomically (write to a temporary file, then rename), always while the
database's write lock is held, so two servers never write it out of order.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlgate.errors import SqlgateError

__all__ = ["Witness", "WitnessFile"]

WITNESS_FORMAT = 1
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Witness:
    head_id: int = 0
    head_hash: str = ""
    verified_id: int = 0
    verified_hash: str = ""


def _position(data: dict[str, object], id_key: str, hash_key: str) -> tuple[int, str]:
    """One (id, hash) pair: id 0 with no hash, or an id from 1 with a sha256 hex digest."""
    raw_id, raw_hash = data.get(id_key, 0), data.get(hash_key, "")
    if isinstance(raw_id, bool) or not isinstance(raw_id, int) or raw_id < 0:
        raise ValueError(id_key)
    if not isinstance(raw_hash, str) or (raw_id > 0 and not _HASH.fullmatch(raw_hash)):
        raise ValueError(hash_key)
    return raw_id, raw_hash if raw_id > 0 else ""


class WitnessFile:
    """`witness.json` in the database's records folder: read, and replaced whole on every
    change."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def beside(cls, db: Path) -> WitnessFile:
        """The witness of the database `db`, in its records folder (`sqlgate.home`)."""
        from sqlgate.home import record_files

        return cls(record_files(db).witness)

    def read(self) -> Witness | None:
        """The witness, or None when there is no file yet. Raises SqlgateError if unreadable."""
        raw = self.read_raw()
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or "head_id" not in data:
                raise ValueError("not a witness object")
            head = _position(data, "head_id", "head_hash")
            verified = _position(data, "verified_id", "verified_hash")
        except (ValueError, UnicodeDecodeError):
            raise SqlgateError(f"the witness {self.path} is not valid witness JSON") from None
        return Witness(*head, *verified)

    def read_raw(self) -> bytes | None:
        """The file's bytes as they are, or None when there is no file."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SqlgateError(f"cannot read the witness {self.path}: {exc.strerror}") from None

    def write(self, witness: Witness) -> None:
        payload = json.dumps({"format": WITNESS_FORMAT, **asdict(witness)}, indent=1) + "\n"
        self._replace(payload.encode("utf-8"))

    def restore(self, raw: bytes | None) -> None:
        """Put back what `read_raw` returned: those bytes, or no file at all."""
        if raw is None:
            self.path.unlink(missing_ok=True)
        else:
            self._replace(raw)

    def _replace(self, payload: bytes) -> None:
        # a fresh private file beside it, as tempfile.mkstemp makes one (O_EXCL, 0600),
        # without importing tempfile: every SessionStart hook writes the witness
        temp = self.path.with_name(f"{self.path.name}.{os.urandom(6).hex()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
