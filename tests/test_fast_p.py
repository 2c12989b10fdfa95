"""Fast@p per turn: hand-computed values on small tables, and the properties any such table must have."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.core.reports.fast_p import P_VALUES, SampleTurn, fast_at, fast_p_table, p_key


def ok(turn: int, speedup: float | None) -> SampleTurn:
    return SampleTurn(turn=turn, correct=True, speedup=speedup)


def wrong(turn: int) -> SampleTurn:
    return SampleTurn(turn=turn, correct=False)


def no_code(turn: int) -> SampleTurn:
    return SampleTurn(turn=turn, has_code=False)


def hacked(turn: int, speedup: float | None = 5.0) -> SampleTurn:
    return SampleTurn(turn=turn, correct=True, hacked=True, speedup=speedup)


# A: no code, incorrect, then correct at 1.6x.   B: correct at 1.1x on turn 1 and stops (early stop).
# C: a hacked "5x" kernel, an honest 2.5x one, then a regression to incorrect.   D: never works, no code last.
TABLE = [
    [no_code(1), wrong(2), ok(3, 1.6)],
    [ok(1, 1.1)],
    [hacked(1), ok(2, 2.5), wrong(3)],
    [wrong(1), wrong(2), no_code(3)],
]


def fast(row, best: bool = False) -> list:
    values = row.fast_best if best else row.fast
    return [values[p_key(p)] for p in P_VALUES]


def test_hand_computed_table():
    table = fast_p_table(TABLE)
    assert table.samples == 4 and [r.turn for r in table.turns] == [1, 2, 3] and table.untimed_correct == 0
    t1, t2, t3 = table.turns
    # turn 1: A no code, B 1.1x, C hacked, D incorrect
    assert (t1.active, t1.correct, t1.correct_best, t1.hacked, t1.no_code) == (4, 0.25, 0.25, 0.25, 0.25)
    assert fast(t1) == [0.25, 0.0, 0.0, 0.0] and fast(t1, best=True) == [0.25, 0.0, 0.0, 0.0]
    # turn 2: B carries its 1.1x turn (it stopped), C's honest 2.5x; the hacked 5x never counted
    assert (t2.active, t2.correct, t2.correct_best, t2.hacked, t2.no_code) == (3, 0.5, 0.5, 0.0, 0.0)
    assert fast(t2) == [0.5, 0.25, 0.25, 0.25] and fast(t2, best=True) == [0.5, 0.25, 0.25, 0.25]
    # turn 3: last turn A 1.6x, B 1.1x, C incorrect, D no code; best of history also keeps C's 2.5x
    assert (t3.active, t3.correct, t3.correct_best, t3.hacked, t3.no_code) == (3, 0.5, 0.75, 0.0, 0.25)
    assert fast(t3) == [0.5, 0.25, 0.25, 0.0]
    assert fast(t3, best=True) == [0.75, 0.5, 0.5, 0.25]
    assert table.last is t3 and table.at(2) is t2
    # the single-cell function agrees with the table
    assert fast_at(TABLE, 1.2, 3) == 0.25 and fast_at(TABLE, 1.2, 3, best_of_history=True) == 0.5
    assert fast_at(TABLE, 2.0, 1) == 0.0 and fast_at([], 1.0, 1) is None


def test_speedup_exactly_p_counts():
    table = fast_p_table([[ok(1, 1.2)], [ok(1, 1.19)]])
    assert fast(table.at(1)) == [1.0, 0.5, 0.0, 0.0]


def test_untimed_correct_kernel_makes_fast_p_unknown_not_zero():
    # E: correct but untimed, then 1.3x.   F: incorrect twice.
    samples = [[ok(1, None), ok(2, 1.3)], [wrong(1), wrong(2)]]
    table = fast_p_table(samples)
    t1, t2 = table.turns
    assert table.untimed_correct == 1
    assert t1.correct == 0.5 and t1.correct_best == 0.5
    assert fast(t1) == [None] * 4 and fast(t1, best=True) == [None] * 4
    assert fast(t2) == [0.5, 0.5, 0.0, 0.0]
    # best of history: 1.3x already decides p <= 1.2; for 1.5 and 2 the untimed turn might have been faster
    assert fast(t2, best=True) == [0.5, 0.5, None, None]


def test_cpu_backend_all_untimed_and_hacked_untimed_is_no_evidence():
    table = fast_p_table([[ok(1, None)], [wrong(1)], [no_code(1)]])
    row = table.at(1)
    assert fast(row) == [None] * 4 and fast(row, best=True) == [None] * 4
    assert (row.correct, row.hacked, row.no_code) == (pytest.approx(1 / 3), 0.0, pytest.approx(1 / 3))
    # a hacked kernel without timing is a failure, not an unknown
    table = fast_p_table([[hacked(1, None)], [ok(1, 1.0)]])
    assert fast(table.at(1)) == [0.5, 0.0, 0.0, 0.0] and table.untimed_correct == 0


def test_every_sample_is_in_the_denominator_even_without_turns():
    table = fast_p_table([[ok(2, 3.0)], []])
    t1, t2 = table.turns
    assert t1.active == 0 and t1.correct == 0.0 and fast(t1) == [0.0] * 4  # no turn yet is a failure
    assert t2.active == 1 and t2.correct == 0.5 and fast(t2) == [0.5] * 4
    assert fast_p_table([]).turns == [] and fast_p_table([]).samples == 0


def test_turn_order_does_not_matter_but_duplicates_are_an_error():
    assert fast_p_table([list(reversed(s)) for s in TABLE]) == fast_p_table(TABLE)
    with pytest.raises(ValueError, match="same number"):
        fast_p_table([[ok(1, 1.0), wrong(1)]])


def test_json_round_trip():
    table = fast_p_table(TABLE)
    assert type(table).model_validate_json(table.model_dump_json()) == table
    assert set(table.at(1).fast) == {"1", "1.2", "1.5", "2"}


# --- properties -----------------------------------------------------------------------------------------

speedups = st.one_of(st.none(), st.floats(min_value=0.0, max_value=4.0, allow_nan=False))
kinds = st.sampled_from(["ok", "wrong", "hacked", "no_code"])


@st.composite
def samples(draw, timed_only: bool = False):
    result = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        length = draw(st.integers(min_value=0, max_value=5))  # 0..5 turns: early stops of every length
        sample = []
        for turn in range(1, length + 1):
            kind = draw(kinds)
            speedup = draw(st.floats(min_value=0.0, max_value=4.0) if timed_only else speedups)
            sample.append(
                SampleTurn(
                    turn=turn,
                    has_code=kind != "no_code",
                    correct=kind in ("ok", "hacked"),
                    hacked=kind == "hacked",
                    speedup=speedup if kind != "no_code" else None,
                )
            )
        result.append(sample)
    return result


def _both(a, b) -> bool:
    return a is not None and b is not None


@settings(deadline=None, max_examples=200)
@given(samples())
def test_properties(drawn):
    table = fast_p_table(drawn)
    previous = None
    for row in table.turns:
        assert row.correct_best >= row.correct
        for value in (row.correct, row.correct_best, row.hacked, row.no_code):
            assert 0.0 <= value <= 1.0
        assert row.correct + row.hacked + row.no_code <= 1.0 + 1e-9
        for p in P_VALUES:
            last, best = row.fast[p_key(p)], row.fast_best[p_key(p)]
            if _both(last, best):
                assert best >= last  # the best turn so far is at least as good as the current one
            if last is not None:
                assert last <= row.correct
            if best is not None:
                assert best <= row.correct_best
            if previous is not None and _both(best, previous.fast_best[p_key(p)]):
                assert best >= previous.fast_best[p_key(p)]  # history only grows
            assert last == fast_at(drawn, p, row.turn) and best == fast_at(drawn, p, row.turn, True)
        for values in (row.fast, row.fast_best):
            known = [values[p_key(p)] for p in P_VALUES if values[p_key(p)] is not None]
            assert known == sorted(known, reverse=True)  # a higher bar passes fewer samples
        if previous is not None:
            assert row.correct_best >= previous.correct_best
        previous = row


@settings(deadline=None, max_examples=100)
@given(samples(timed_only=True))
def test_timed_runs_have_no_unknowns(drawn):
    table = fast_p_table(drawn)
    assert table.untimed_correct == 0
    assert all(v is not None for row in table.turns for v in [*row.fast.values(), *row.fast_best.values()])
