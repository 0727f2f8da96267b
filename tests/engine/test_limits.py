"""Budgets: the deadline on an injected clock, cancellation, and `watched` around real SQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import cast

import apsw
import pytest

from sqlgate.engine.limits import CANCELLED_MESSAGE, CallControl, Deadline, watched
from sqlgate.errors import LimitExceeded, QueryTimeout
from sqlgate.service import Service
from tests.conftest import FakeClock

ENDLESS = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"
BOUNDED = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000) "
    "SELECT count(*) FROM c"
)


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    connection = apsw.Connection(":memory:")
    yield connection
    connection.close()


class InterruptRecorder:
    """Stands in for a connection: counts interrupt() calls."""

    def __init__(self) -> None:
        self.interrupts = 0

    def interrupt(self) -> None:
        self.interrupts += 1


def as_connection(fake: InterruptRecorder) -> apsw.Connection:
    return cast(apsw.Connection, fake)


# -- Deadline ---------------------------------------------------------------------------
def test_deadline_is_not_expired_before_its_budget() -> None:
    clock = FakeClock()
    deadline = Deadline(5.0, clock)
    clock.advance(4.999)
    assert not deadline.expired()


def test_deadline_expires_when_its_budget_is_spent() -> None:
    clock = FakeClock()
    deadline = Deadline(5.0, clock)
    clock.advance(5.0)
    assert deadline.expired()


def test_deadline_counts_from_when_it_was_made() -> None:
    clock = FakeClock(start=0.0)
    clock.advance(100.0)
    deadline = Deadline(1.0, clock)
    assert not deadline.expired()
    clock.advance(1.0)
    assert deadline.expired()


def test_deadline_with_a_stepping_clock_expires_after_enough_readings() -> None:
    clock = FakeClock(step=1.0)
    deadline = Deadline(3.0, clock)  # reading 1: start
    assert [deadline.expired() for _ in range(4)] == [False, False, True, True]


# -- CallControl ------------------------------------------------------------------------
def test_call_control_starts_not_cancelled() -> None:
    assert not CallControl().cancelled


def test_cancel_without_a_connection_only_sets_the_flag() -> None:
    control = CallControl()
    control.cancel()
    assert control.cancelled


def test_cancel_while_holding_interrupts_the_connection() -> None:
    control = CallControl()
    fake = InterruptRecorder()
    with control.holding(as_connection(fake)):
        control.cancel()
    assert fake.interrupts == 1
    assert control.cancelled


def test_cancel_after_holding_leaves_the_connection_alone() -> None:
    control = CallControl()
    fake = InterruptRecorder()
    with control.holding(as_connection(fake)):
        pass
    control.cancel()
    assert fake.interrupts == 0


# -- watched ----------------------------------------------------------------------------
def test_watched_lets_a_quick_statement_finish(conn: apsw.Connection) -> None:
    with watched(conn, Deadline(1.0, FakeClock()), CallControl()):
        assert conn.execute(BOUNDED).fetchall() == [(20000,)]


def test_watched_stops_a_statement_past_its_deadline(conn: apsw.Connection) -> None:
    clock = FakeClock(step=0.01)  # every progress check moves time on; no sleeping
    with (
        pytest.raises(QueryTimeout, match=r"2 s budget \(--query-timeout\)"),
        watched(conn, Deadline(2.0, clock), CallControl()),
    ):
        conn.execute(ENDLESS).fetchall()
    assert clock.now >= 1002.0


def test_watched_refuses_to_start_when_already_cancelled(conn: apsw.Connection) -> None:
    control = CallControl()
    control.cancel()
    ran = False
    with pytest.raises(QueryTimeout) as caught, watched(conn, Deadline(1.0, FakeClock()), control):
        ran = True
    assert not ran
    assert str(caught.value) == CANCELLED_MESSAGE


def test_watched_stops_a_statement_cancelled_while_running(conn: apsw.Connection) -> None:
    control = CallControl()
    readings = 0

    def clock() -> float:  # read by the progress handler while the statement runs
        nonlocal readings
        readings += 1
        if readings == 5:
            control.cancel()
        return 0.0

    with (
        pytest.raises(QueryTimeout, match="cancelled by the client"),
        watched(conn, Deadline(1.0, clock), control),
    ):
        conn.execute(ENDLESS).fetchall()


def test_timeout_and_cancel_messages_differ(conn: apsw.Connection) -> None:
    with (
        pytest.raises(QueryTimeout) as caught,
        watched(conn, Deadline(0.5, FakeClock(step=1.0)), CallControl()),
    ):
        conn.execute(ENDLESS).fetchall()
    assert "cancelled" not in str(caught.value)
    assert "0.5 s budget" in str(caught.value)
    assert isinstance(caught.value, LimitExceeded)


def test_watched_removes_its_progress_handler(conn: apsw.Connection) -> None:
    clock = FakeClock(step=1.0)
    with (
        pytest.raises(QueryTimeout),
        watched(conn, Deadline(1.0, clock), CallControl()),
    ):
        conn.execute(ENDLESS).fetchall()
    # the deadline is long past: only a removed handler lets this run to the end
    assert conn.execute(BOUNDED).fetchall() == [(20000,)]


def test_watched_lets_other_sqlite_errors_through(conn: apsw.Connection) -> None:
    with (
        pytest.raises(apsw.SQLError, match="no such table"),
        watched(conn, Deadline(1.0, FakeClock()), CallControl()),
    ):
        conn.execute("SELECT * FROM missing")


# -- through the service ----------------------------------------------------------------
def test_read_query_past_its_deadline_raises_query_timeout(
    make_service: Callable[..., Service],
) -> None:
    service = make_service(FakeClock(step=0.01), query_timeout=1.0)
    with pytest.raises(QueryTimeout, match=r"1 s budget \(--query-timeout\)"):
        service.read_query(ENDLESS)
    assert service.read_query("SELECT 1 AS one") == "one\n1\n# 1 row"


class SignallingClock(FakeClock):
    """Sets `running` on its second reading: the first makes the deadline, later ones come
    from the progress handler, so the statement is executing."""

    def __init__(self, step: float) -> None:
        super().__init__(step=step)
        self.readings = 0
        self.running = threading.Event()

    def __call__(self) -> float:
        self.readings += 1
        if self.readings >= 2:
            self.running.set()
        return super().__call__()


def test_cancel_from_another_thread_stops_the_query(make_service: Callable[..., Service]) -> None:
    # the tiny step only ends the statement if cancellation fails, so the test cannot hang
    clock = SignallingClock(step=1e-5)
    service = make_service(clock, query_timeout=5.0)
    control = CallControl()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            service.read_query(ENDLESS, control=control)
        except BaseException as exc:
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert clock.running.wait(timeout=30), "the query never started"
    control.cancel()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert len(failures) == 1
    assert isinstance(failures[0], QueryTimeout)
    assert str(failures[0]) == CANCELLED_MESSAGE
    assert service.read_query("SELECT 2 AS two") == "two\n2\n# 1 row"
