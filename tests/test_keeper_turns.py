"""The keeper's turn-taking mutex: a request made under an exclusive GPU hold is served before waiting others."""

from __future__ import annotations

import threading
import time

from tritongym.core.sandbox.keeper_turns import KeeperTurns


def _waiter(turns: KeeperTurns, name: str, urgent: bool, order: list[str]) -> threading.Thread:
    def run() -> None:
        with turns.turn(urgent):
            order.append(name)
            time.sleep(0.01)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _queued(turns: KeeperTurns, count: int) -> None:
    """Wait until `count` threads wait on the mutex's condition (each waits there once it found the mutex busy)."""
    deadline = time.monotonic() + 10
    while len(turns._cond._waiters) < count:  # noqa: SLF001 - the only way to see a thread has queued
        assert time.monotonic() < deadline, "the waiters never queued"
        time.sleep(0.001)


def test_an_urgent_request_goes_before_requests_that_queued_earlier():
    """Five rounds: without the rule, the urgent request would come first by chance in about one of 4^5."""
    for _ in range(5):
        turns = KeeperTurns()
        order: list[str] = []
        turns.take()  # a request under way: everyone below queues behind it
        threads = []
        for i in range(3):
            threads.append(_waiter(turns, f"lend{i}", False, order))
            _queued(turns, i + 1)
        threads.append(_waiter(turns, "drift", True, order))
        _queued(turns, 4)
        turns.give_back()
        for thread in threads:
            thread.join(10)
        assert order[0] == "drift", order
        assert sorted(order[1:]) == ["lend0", "lend1", "lend2"]


def test_the_mutex_holds_one_caller_at_a_time_and_nobody_starves():
    turns = KeeperTurns()
    inside = 0
    most = 0
    served = []
    guard = threading.Lock()

    def run(i: int) -> None:
        nonlocal inside, most
        with turns.turn(urgent=i % 4 == 0):
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.001)
            with guard:
                inside -= 1
            served.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most == 1
    assert sorted(served) == list(range(40))


def test_a_request_under_way_is_never_preempted():
    """An urgent caller waits for the request under way to end: the keeper answers one request at a time."""
    turns = KeeperTurns()
    turns.take()
    got = threading.Event()

    def urgent() -> None:
        with turns.turn(urgent=True):
            got.set()

    thread = threading.Thread(target=urgent)
    thread.start()
    assert not got.wait(0.1)
    turns.give_back()
    assert got.wait(10)
    thread.join(10)
