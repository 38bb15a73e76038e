"""The core's timers: deadlines keyed by Deadline(owner, kind), equal ones in the order they
were scheduled, a cancelled or rescheduled one never fired twice."""

from __future__ import annotations

from enum import Enum

from bridge.core.timers import Deadline, Timers


class Kind(Enum):
    A = "a"
    B = "b"


def test_deadlines_due_at_the_same_instant_fire_in_the_order_they_were_scheduled() -> None:
    keys = [Deadline(owner, kind) for owner in ("z", "a", "m") for kind in (Kind.B, Kind.A)]
    timers = Timers()
    for key in keys:
        timers.schedule(key, 5.0)
    assert list(timers.pop_due(5.0)) == keys


def test_a_rescheduled_deadline_fires_once_at_its_new_time_and_a_cancelled_one_never() -> None:
    timers = Timers()
    moved, cancelled, kept = Deadline(1, Kind.A), Deadline(2, Kind.A), Deadline(1, Kind.B)
    for key in (moved, cancelled, kept):
        timers.schedule(key, 1.0)
    timers.schedule(moved, 3.0)
    timers.cancel(cancelled)
    assert timers.next_deadline() == 1.0
    assert list(timers.pop_due(2.0)) == [kept]
    assert timers.next_deadline() == 3.0
    assert list(timers.pop_due(3.0)) == [moved]
    assert list(timers.pop_due(10.0)) == [] and timers.next_deadline() is None


def test_what_the_caller_does_for_one_due_deadline_counts_for_the_next() -> None:
    """Due together: handling the first cancels the second (it never fires) and schedules a
    third, due already, which waits for the next pass rather than firing in this one."""
    timers = Timers()
    first, cancelled, later = Deadline(1, Kind.A), Deadline(2, Kind.A), Deadline(3, Kind.A)
    timers.schedule(first, 1.0)
    timers.schedule(cancelled, 2.0)
    fired = []
    for key in timers.pop_due(5.0):
        fired.append(key)
        if key == first:
            timers.cancel(cancelled)
            timers.schedule(later, 4.0)
    assert fired == [first]
    assert timers.next_deadline() == 4.0
    assert list(timers.pop_due(5.0)) == [later]
