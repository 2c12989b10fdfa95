"""Records spread evenly over a GPU's keepers, and each stays with its keeper (`sandbox/keeper_choice.py`)."""

from __future__ import annotations

from collections import Counter

from tritongym.core.sandbox.keeper_choice import KeeperChoice


def test_eight_problems_on_four_keepers_take_two_each_and_keep_them():
    """A GPU holding 8 of an RL batch's problems: hashed, they once fell 3, 3, 2 and 0 on its 4 keepers."""
    choice = KeeperChoice(4)
    keys = [f"problem-{i}" for i in range(8)]
    first = {key: choice.of("0", key) for key in keys}
    assert sorted(Counter(first.values()).values()) == [2, 2, 2, 2]
    for _ in range(3):  # the next RL steps: every task of a record goes where its record is
        for key in reversed(keys):
            assert choice.of("0", key) == first[key]
    assert choice.held("0") == [2, 2, 2, 2]


def test_each_gpu_spreads_its_own_records():
    choice = KeeperChoice(2)
    assert [choice.of("0", k) for k in "ab"] == [0, 1]
    assert [choice.of("1", k) for k in "cab"] == [0, 1, 0]  # the same key on another GPU is that GPU's record
    assert choice.held("0") == [1, 1] and choice.held("1") == [2, 1]


def test_a_long_stream_of_new_records_forgets_the_oldest_and_stays_even():
    """A service judging lone `eval`s draws fresh seeds each time: every task is a new record.  The memory stays
    bounded and the shares even; a forgotten key is placed afresh."""
    choice = KeeperChoice(3)
    limit = KeeperChoice.REMEMBERED_PER_KEEPER * 3
    for i in range(limit * 4 + 1):
        choice.of("0", f"k{i}")
    held = choice.held("0")
    assert sum(held) == limit and max(held) - min(held) <= 2  # forgetting the oldest takes from any keeper
    k = choice.of("0", "k0")  # long forgotten: placed again, on a keeper with the fewest
    assert held[k] == min(held)
