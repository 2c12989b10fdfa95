"""The settings names of `benchmarks/lock_options_ab.py` and `gpu_scaling.py --settings` (`backend_options`): what
each one sets, since an A/B is only as good as the one thing its two settings differ in.

Stop 57 compared `workers=16` with `default` on one H200 and read a difference of worker counts where the lock's
switches differed too (`workers=16` alone turns every switch it does not name off); `default+...` keeps them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from lock_options_ab import backend_options  # noqa: E402

from tritongym.core.worker_task import TimingOptions  # noqa: E402


def test_a_default_setting_changes_only_what_it_names():
    options = backend_options("default+workers=12+connections=8")
    assert options == {"timing": {}, "workers_per_gpu": 12, "device_connections": 8}
    timing = TimingOptions(**options["timing"])
    assert timing.unlock_compiles and timing.yield_to_waiting_timings and timing.shared_check_s == 30.0
    assert backend_options("default+shared=0")["timing"] == {"shared_check_s": 0.0}


def test_a_setting_without_default_turns_off_the_switches_it_does_not_name():
    timing = backend_options("workers=16")["timing"]
    assert timing == {"unlock_compiles": False, "yield_between_calls": False, "yield_to_waiting_timings": False}
    named = backend_options("unlocked+handback+shared=30+connections=8")
    assert named["timing"]["unlock_compiles"] and named["timing"]["yield_to_waiting_timings"]
    assert not named["timing"]["yield_between_calls"] and named["device_connections"] == 8


def test_an_unknown_part_is_refused_with_the_names_it_could_be():
    with pytest.raises(SystemExit, match="unknown setting 'fast'"):
        backend_options("default+fast")


def test_a_switch_part_sets_the_gil_hand_over_and_leaves_the_lock_setting_as_it_was():
    """`gpu_scaling.py`'s `switch=S` (the pool process's `sys.setswitchinterval` for a column) comes off a setting
    before the lock's parts are read, so `default+switch=0.0005` runs today's defaults and nothing else differs."""
    from gpu_scaling import split_switch

    assert split_switch("default+switch=0.0005") == ("default", 0.0005)
    assert split_switch("switch=0.001") == ("default", 0.001)
    assert split_switch("unlocked+handback") == ("unlocked+handback", None)
    rest, seconds = split_switch("default+workers=12+switch=0.002")
    assert (rest, seconds) == ("default+workers=12", 0.002) and backend_options(rest)["workers_per_gpu"] == 12
    for bad in ("default+switch=fast", "default+switch=0", "default+switch=5"):
        with pytest.raises(SystemExit, match="switch takes seconds"):
            split_switch(bad)


def test_the_scaling_timeline_keeps_which_keeper_served_each_request():
    """`gpu_scaling.py`'s marks: a keeper's request keeps its process, kind and seconds (a problem's tasks all go to
    one of a GPU's keepers, and the next two-GPU run counts the requests each keeper served); the rest by GPU."""
    from gpu_scaling import timeline_summary

    marks = [
        {"t": 100.0, "event": "task_start", "gpu": "0", "mode": None, "pid": 1},
        {"t": 100.5, "event": "keeper_request", "kind": "LEND", "seconds": 0.012, "pid": 4242},
        {"t": 101.0, "event": "task_end", "gpu": "0", "mode": None, "pid": 1},
    ]
    summary = timeline_summary(marks, begun=99.0, clock=99.5, wall_s=2.0)
    assert summary["marks"][1] == [1.0, "keeper_request", 4242, "LEND", 0.012, None]
    assert summary["marks"][0] == [0.5, "task_start", "0", None]
