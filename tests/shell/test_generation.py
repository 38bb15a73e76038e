"""A server generation's nursery (bridge/shell/session/generation.py): tasks given before it opens
run once it does, retiring it cancels them all and starts nothing more, and `ended` says when
every one of them has returned."""

from __future__ import annotations

import trio
import trio.testing

from bridge.shell.session.generation import Generation


async def test_tasks_given_before_the_nursery_opens_run_once_it_does_until_retired() -> None:
    began: list[str] = []
    cancelled: list[str] = []

    async def task(name: str) -> None:
        began.append(name)
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled.append(name)
            raise

    async with trio.open_nursery() as nursery:
        generation = Generation(nursery, "gen-1")
        generation.start_soon(task, "a", name="a")  # the nursery is not open yet
        generation.start_soon(task, "b", name="b")
        await trio.testing.wait_all_tasks_blocked()
        generation.start_soon(task, "c", name="c")  # now it is
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(began[:2]) == ["a", "b"] and began[2:] == ["c"]
        assert not generation.retired
        generation.retire()
        assert generation.retired
        generation.start_soon(task, "d", name="d")  # a retired generation starts nothing
        with trio.fail_after(1):
            await generation.ended.wait()
    assert sorted(cancelled) == ["a", "b", "c"] and "d" not in began


async def test_a_generation_retired_before_it_opens_still_runs_what_it_was_given_to_its_end(
) -> None:
    # A task given a slot must run (and free it) even when its generation retired at once.
    freed: list[str] = []

    async def task() -> None:
        try:
            await trio.sleep_forever()
        finally:
            freed.append("slot")

    async with trio.open_nursery() as nursery:
        generation = Generation(nursery, "gen-1")
        generation.start_soon(task, name="task")
        generation.retire()
        with trio.fail_after(1):
            await generation.ended.wait()
    assert freed == ["slot"]


async def test_a_retired_generation_leaves_the_others_running() -> None:
    async with trio.open_nursery() as nursery:
        old, new = Generation(nursery, "gen-1"), Generation(nursery, "gen-2")
        old.start_soon(trio.sleep_forever, name="old")
        new.start_soon(trio.sleep_forever, name="new")
        old.retire()
        with trio.fail_after(1):
            await old.ended.wait()
        assert not new.ended.is_set() and not new.retired
        nursery.cancel_scope.cancel()
