"""`tritongym tune`: parameters found in the source, variants baked into it, search strategies, and tuning
on triton-cpu through the real pipeline (sandboxed workers, real SQLite), records, caching and resumption.

triton-cpu times nothing, so these tests exercise exploration and judgement: every variant checked, a
broken one rejected, a second tune answered by the registry.  The timed path runs on a GPU.
"""

from __future__ import annotations

import ast
import difflib
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tritongym
from tritongym import api
from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.errors import NoKernelStored, PluginError
from tritongym.core.learn.feedback import render_feedback
from tritongym.core.learn.run_config import load_run_config
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.tune import ProblemTuning
from tritongym.core.tune.autotuned import autotuned_source
from tritongym.core.tune.feedback import FeedbackTuner
from tritongym.core.tune.space import discover, values_around
from tritongym.core.tune.variant import VariantError, bake
from tritongym.core.tuning import SearchSpace, TuneParam, TuningRecord, config_key

SOLUTIONS = Path(tritongym.__file__).parent / "problems" / "solutions"
CONFIG = EvalConfig(backend="triton-cpu", trials=2, timeout_s=60, workers=2, seed=0)
runner = CliRunner()


def solution(name: str) -> str:
    return (SOLUTIONS / f"{name}.py").read_text()


def params_of(source: str) -> dict[str, TuneParam]:
    return {p.name: p for p in discover(source).space.params}


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def count_evaluations(db: Path) -> tuple[int, int]:
    reg = Registry(db)
    try:
        return reg.db["evaluations"].count, reg.db.execute("SELECT max(id) FROM evaluations").fetchone()[0] or 0
    finally:
        reg.close()


# --- parameters found in the source ---------------------------------------------------------------------


def test_parameters_of_the_bundled_relu_softmax_and_matmul():
    relu = params_of(solution("relu"))
    assert list(relu) == ["BLOCK", "num_warps", "num_stages"]
    assert relu["BLOCK"].current == 1024 and relu["BLOCK"].values == [256, 512, 1024]
    assert "local `block` in forward = 1024" in relu["BLOCK"].where
    assert relu["num_warps"].current == 4 and relu["num_warps"].values == [1, 2, 4, 8, 16]
    assert relu["num_stages"].current == 3 and relu["num_stages"].values == [1, 2, 3, 4, 5]
    assert "Triton's default" in relu["num_warps"].where

    softmax = discover(solution("softmax")).space
    assert [p.name for p in softmax.params] == ["num_warps", "num_stages"]
    assert any("BLOCK_N" in f and "next_power_of_2" in f for f in softmax.fixed), softmax.fixed

    matmul = params_of(solution("matmul"))
    assert {n: p.current for n, p in matmul.items()} == {
        "BLOCK_M": 64,
        "BLOCK_N": 64,
        "BLOCK_K": 32,
        "num_warps": 4,
        "num_stages": 3,
    }
    assert "local `bm`" in matmul["BLOCK_M"].where and "local `bn`" in matmul["BLOCK_N"].where
    assert "`BLOCK_K=32` at the launch" in matmul["BLOCK_K"].where


@pytest.mark.parametrize("name", sorted(p.stem for p in SOLUTIONS.glob("*.py")))
def test_every_bundled_solution_has_parameters_and_round_trips(name):
    """Each solution: something tunable, the source's own config bakes into the source itself, and a
    variant read back has the baked values as its current ones."""
    source = solution(name)
    found = discover(source)
    assert found.space.params, found.space.fixed
    assert bake(found, found.as_written()) == source
    far = {p.name: p.values[-1] if p.values[-1] != p.current else p.values[0] for p in found.space.params}
    variant = bake(found, far)
    assert variant != source
    assert discover(variant).space.current() == far


HAND_WRITTEN = """
import torch
import triton
import triton.language as tl

BLOCK = 256  # the tile
WARPS = 8
TWICE = 64
TWICE = 128


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr, OTHER: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK, 1, TWICE, num_warps=WARPS, num_stages=n % 3)
        return out
"""


def test_module_constants_and_launch_keywords_of_a_hand_written_kernel():
    space = discover(HAND_WRITTEN).space
    params = {p.name: p for p in space.params}
    assert list(params) == ["BLOCK", "num_warps"]
    assert params["BLOCK"].current == 256 and "module constant `BLOCK` = 256 (line 6)" in params["BLOCK"].where
    assert params["num_warps"].current == 8 and params["num_warps"].values == [2, 4, 8, 16]
    assert "module constant `WARPS`" in params["num_warps"].where
    fixed = "\n".join(space.fixed)
    assert "copy_kernel.FLAG: 1 is not a power of two" in fixed
    assert "copy_kernel.OTHER: `TWICE` is assigned 2 times" in fixed
    assert "copy_kernel.num_stages: computed at the launch (`n % 3`)" in fixed

    variant = bake(discover(HAND_WRITTEN), {"BLOCK": 512, "num_warps": 4})
    assert changed_lines(HAND_WRITTEN, variant) == [
        "-BLOCK = 256  # the tile",
        "-WARPS = 8",
        "+BLOCK = 512  # the tile",
        "+WARPS = 4",
    ]


AUTOTUNED = """
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=8, num_stages=2),
    ],
    key=["n"],
)
@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out
"""


def test_an_autotune_list_gives_points_and_each_variant_keeps_one_config():
    found = discover(AUTOTUNED)
    space = found.space
    assert [(p.name, p.current, p.autotuned) for p in space.params] == [
        ("BLOCK", 128, True),
        ("num_warps", 4, True),
        ("num_stages", 3, True),
    ]
    assert space.points == [
        {"BLOCK": 128, "num_warps": 4, "num_stages": 3},
        {"BLOCK": 512, "num_warps": 8, "num_stages": 2},
    ]
    assert found.as_written() == {} and bake(found, {}) == AUTOTUNED  # the list as written: the autotuner picks
    second = bake(found, space.points[1])
    assert 'configs=[triton.Config({"BLOCK": 512}, num_warps=8, num_stages=2)],' in second
    assert 'triton.Config({"BLOCK": 128}' not in second
    around = found.around(space.points[1])
    assert around.current() == space.points[1] and around.params[0].values == [128, 256, 512, 1024]
    grid_point = bake(found, {"BLOCK": 256, "num_warps": 8, "num_stages": 4})
    assert 'configs=[triton.Config({"BLOCK": 256}, num_warps=8, num_stages=4)],' in grid_point
    assert discover(grid_point).space.points == [{"BLOCK": 256, "num_warps": 8, "num_stages": 4}]


def test_a_variant_changes_only_the_values_and_keeps_the_comments():
    source = solution("matmul")
    variant = bake(discover(source), {"BLOCK_M": 32, "BLOCK_K": 64, "num_warps": 8})
    assert changed_lines(source, variant) == [
        "-        bm, bn = 64, 64",
        "+        bm, bn = 32, 64",
        "-            BLOCK_K=32,",
        "+            BLOCK_K=64,",
        "+            num_warps=8,",
    ]
    assert "# Out-of-range rows, columns and the K tail load 0" in variant
    with pytest.raises(VariantError, match="BLOCK_Q"):
        bake(discover(source), {"BLOCK_Q": 16})
    with pytest.raises(VariantError, match="positive integers"):
        bake(discover(source), {"BLOCK_M": 0})


def test_values_stay_in_sane_bounds():
    assert values_around("constexpr", 16) == [16, 32, 64]
    assert values_around("constexpr", 2048) == [512, 1024, 2048]  # what the kernel uses widens the range
    assert values_around("num_warps", 1) == [1, 2, 4]
    assert values_around("num_stages", 1) == [1, 2, 3]


# --- strategies -----------------------------------------------------------------------------------------


def small_space() -> SearchSpace:
    return SearchSpace(
        params=[
            TuneParam(name="BLOCK", kind="constexpr", kernel="k", current=64, values=[32, 64, 128], where=""),
            TuneParam(name="num_warps", kind="num_warps", kernel="k", current=4, values=[2, 4, 8], where=""),
        ]
    )


def record(config: dict) -> TuningRecord:
    return TuningRecord(config=config, kernel_id="x", strategy="test", status="ok")


def test_the_grid_walk_visits_every_configuration_once_nearest_first():
    space = small_space()
    walk = list(space.by_distance())
    assert len(walk) == space.size == 9
    assert len({config_key(c) for c in walk}) == 9
    assert walk[:5] == [
        {"BLOCK": 64, "num_warps": 4},
        {"BLOCK": 32, "num_warps": 4},
        {"BLOCK": 128, "num_warps": 4},
        {"BLOCK": 64, "num_warps": 2},
        {"BLOCK": 64, "num_warps": 8},
    ]
    assert sorted(map(config_key, walk)) == sorted(config_key(space.config_at(i)) for i in range(space.size))


def test_exhaustive_proposes_in_order_skips_what_is_measured_and_keeps_to_the_budget():
    exhaustive = PluginHost(load_entry_points=False).create("search_strategy", "exhaustive")
    space = small_space()
    measured = [record(space.current())]
    first = exhaustive.propose(space, measured, 3)
    assert first == [{"BLOCK": 32, "num_warps": 4}, {"BLOCK": 128, "num_warps": 4}, {"BLOCK": 64, "num_warps": 2}]
    after = exhaustive.propose(space, measured + [record(c) for c in first], 100)
    assert len(after) == 5 and not {config_key(c) for c in after} & {config_key(c) for c in first}
    everything = measured + [record(c) for c in first + after]
    assert exhaustive.propose(space, everything, 10) == []


def test_random_is_seeded_without_repeats_and_within_budget():
    host = PluginHost(load_entry_points=False)
    space = small_space()
    seeded = host.create("search_strategy", "random", {"seed": 7})
    a = seeded.propose(space, [], 4)
    assert len(a) == 4 and len({config_key(c) for c in a}) == 4
    assert all(space.contains(c) for c in a)
    assert host.create("search_strategy", "random", {"seed": 7}).propose(space, [], 4) == a
    rest = seeded.propose(space, [record(c) for c in a[:2]], 2)
    assert rest == a[2:4]  # resuming after two continues the same sequence
    assert len(seeded.propose(space, [], 50)) == 9
    others = [host.create("search_strategy", "random", {"seed": s}).propose(space, [], 9) for s in range(4)]
    assert len({tuple(map(config_key, o)) for o in others}) > 1
    with pytest.raises(tritongym.TritonGymError, match="search_strategy 'random'"):
        host.create("search_strategy", "random", {"seed": -1})


# --- tuning on triton-cpu -------------------------------------------------------------------------------


class Interrupted(Exception):
    pass


# slow tier (10 s: a budget of variants judged, then again): the fast tier tunes end to end in
# test_a_variant_that_breaks_correctness_is_rejected_and_never_best and test_tune_command_help_json_and_exit_codes
@pytest.mark.slow
def test_tune_records_every_variant_resumes_costs_nothing_twice_and_transfers(tmp_path):
    db = tmp_path / "registry.db"
    first = api.evaluate(SOLUTIONS / "relu.py", "relu", CONFIG, db)
    assert first.status == tritongym.Status.ok

    def interrupt(problem, rec):
        if rec.strategy != "source":
            raise Interrupted

    with pytest.raises(Interrupted):  # stopped after its first batch of two variants
        api.tune("relu", budget=3, config=CONFIG, registry=db, on_record=interrupt)
    assert count_evaluations(db)[0] == 3

    summary = api.tune("relu", budget=3, config=CONFIG, registry=db)
    (relu,) = summary.problems
    assert relu.status == "tuned" and relu.source_kernel_id == first.kernel_id
    assert relu.variants == 3 and relu.evaluated == 1 and relu.cached == 3 and relu.rejected == 0
    assert [r.strategy for r in relu.records] == ["source", "exhaustive", "exhaustive", "exhaustive"]
    assert [r.config for r in relu.records[1:]] == [
        {"BLOCK": 512, "num_warps": 4, "num_stages": 3},
        {"BLOCK": 1024, "num_warps": 2, "num_stages": 3},
        {"BLOCK": 1024, "num_warps": 8, "num_stages": 3},
    ]
    assert all(r.status == "ok" and r.evaluation_id for r in relu.records)
    assert not relu.timed and relu.speedup is None and "no speedup can be measured" in relu.note
    assert relu.best_kernel_id == first.kernel_id  # untimed: the first correct one, the kernel as written
    reg = Registry(db)
    rows = list(reg.db["tuning_records"].rows_where(order_by="id"))
    assert len(rows) == 4 and {r["source_kernel_id"] for r in rows} == {first.kernel_id}
    assert {r["backend"] for r in rows} == {"triton-cpu"} and {r["size"] for r in rows} == {"cpu"}
    halved = next(r for r in rows if json.loads(r["config"]) == {"BLOCK": 512, "num_warps": 4, "num_stages": 3})
    assert halved["kernel_id"] == relu.records[1].kernel_id and halved["status"] == "ok"
    assert "block = 512" in reg.db["kernels"].get(halved["kernel_id"])["source"]
    reg.close()

    before = count_evaluations(db)
    again = api.tune("relu", budget=3, config=CONFIG, registry=db).problems[0]
    assert again.evaluated == 0 and again.cached == 4
    assert count_evaluations(db) == before  # no evaluation stored, none refreshed into a new row
    assert [r.config for r in again.records] == [r.config for r in relu.records]

    # another protocol (three trials) has no records: the best of the nearest tuning is tried first
    other = EvalConfig(**{**CONFIG.model_dump(), "trials": 3})
    moved = api.tune("relu", budget=1, transfer=1, config=other, registry=db).problems[0]
    assert moved.transferred_from == "triton-cpu on cpu, size cpu"
    assert [(r.strategy, r.config) for r in moved.records] == [
        ("source", {"BLOCK": 1024, "num_warps": 4, "num_stages": 3}),
        ("transfer", {"BLOCK": 512, "num_warps": 4, "num_stages": 3}),
    ]
    assert moved.evaluated == 2


BLOCK_ONLY_RIGHT_AT_1024 = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * 1024 + tl.arange(0, BLOCK)  # strides by 1024 whatever BLOCK is
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""


def test_a_variant_that_breaks_correctness_is_rejected_and_never_best(tmp_path):
    kernel = tmp_path / "fragile.py"
    kernel.write_text(BLOCK_ONLY_RIGHT_AT_1024)
    db = tmp_path / "registry.db"
    (tuned,) = api.tune(file=kernel, problem="relu", budget=2, config=CONFIG, registry=db).problems
    assert tuned.status == "tuned" and tuned.source_origin == f"file {kernel}"
    by_config = {config_key(r.config): r for r in tuned.records}
    smaller = by_config[config_key({"BLOCK": 512, "num_warps": 4, "num_stages": 3})]
    assert smaller.status == "incorrect" and "max abs error" in smaller.message
    assert tuned.rejected == 1 and tuned.best_kernel_id == tuned.source_kernel_id
    best = api.best("relu", registry=db)
    assert best is not None and best.kernel_id != smaller.kernel_id
    reg = Registry(db)
    stored = reg.db.execute("SELECT status FROM tuning_records WHERE kernel_id = ?", [smaller.kernel_id]).fetchone()
    assert stored == ("incorrect",)
    reg.close()


def test_best_shows_a_tuned_variant_with_its_config_and_exports_it_baked(tmp_path):
    """The variant with BLOCK=512 was judged before the tuning (earlier id): on an untimed backend it is
    then the best, and `best` says which tuning it is and exports its source with the value baked in."""
    db = tmp_path / "registry.db"
    source = solution("relu")
    variant = bake(discover(source), {"BLOCK": 512})
    assert api.evaluate(tritongym.Candidate(source=variant), "relu", CONFIG, db).status == tritongym.Status.ok
    kernel = tmp_path / "relu.py"
    kernel.write_text(source)
    tuned = api.tune(file=kernel, problem="relu", budget=1, config=CONFIG, registry=db).problems[0]
    assert tuned.records[1].cached and tuned.evaluated == 1  # the kernel as written was judged now

    best = api.best("relu", registry=db)
    assert best.tuning is not None and best.tuning.config == {"BLOCK": 512, "num_warps": 4, "num_stages": 3}
    assert best.tuning.source_kernel_id == tuned.source_kernel_id and best.tuning.strategy == "exhaustive"
    manifest = api.export_best(tmp_path / "out", ["relu"], registry=db)
    assert manifest.kernels[0].tuning == best.tuning
    assert "block = 512" in (tmp_path / "out" / "relu.py").read_text()
    shown = runner.invoke(app, ["best", "relu", "--registry", str(db)])
    assert shown.exit_code == 0 and "with BLOCK=512 num_warps=4 num_stages=3" in shown.stdout

    # `tune relu` from the registry tunes the kernel the best variant came from: the same records, no worker
    again = api.tune("relu", budget=1, config=CONFIG, registry=db).problems[0]
    assert again.source_kernel_id == tuned.source_kernel_id and again.evaluated == 0
    assert "tuned variant" in again.source_origin


STRATEGY_PLUGIN = '''
from tritongym import hookimpl
from tritongym.core.interfaces import SearchStrategy


class WarpsFirst(SearchStrategy):
    """Test strategy: the largest num_warps first, everything else as written."""

    name = "warps-first"

    def propose(self, space, records, budget):
        seen = {tuple(sorted(r.config.items())) for r in records}
        current = space.current()
        warps = next(p for p in space.params if p.name == "num_warps")
        configs = [{**current, "num_warps": w} for w in reversed(warps.values)]
        return [c for c in configs if tuple(sorted(c.items())) not in seen][:budget]


class Broken(SearchStrategy):
    """Test strategy that proposes a parameter the kernel does not have."""

    name = "broken"

    def propose(self, space, records, budget):
        return [{"NOT_A_PARAMETER": 1}]


@hookimpl
def register_search_strategies(register):
    register(WarpsFirst)
    register(Broken)
'''


def test_a_third_party_strategy_is_used_by_name(tmp_path):
    plugin = tmp_path / "warps_first.py"
    plugin.write_text(textwrap.dedent(STRATEGY_PLUGIN))
    host = PluginHost(extra_plugins=[str(plugin)], load_entry_points=False)
    assert host.get("search_strategy", "warps-first").plugin == str(plugin)
    db = tmp_path / "registry.db"
    api.evaluate(SOLUTIONS / "relu.py", "relu", CONFIG, db)
    summary = api.tune(
        "relu", strategy="warps-first", budget=1, config=CONFIG, registry=db, extra_plugins=[str(plugin)]
    )
    (relu,) = summary.problems
    assert relu.strategy == "warps-first" and relu.records[1].strategy == "warps-first"
    assert relu.records[1].config == {"BLOCK": 1024, "num_warps": 16, "num_stages": 3}
    with pytest.raises(PluginError, match=rf"search strategy 'broken' \(plugin '{plugin}'\).*NOT_A_PARAMETER"):
        api.tune("relu", strategy="broken", budget=1, config=CONFIG, registry=db, extra_plugins=[str(plugin)])


def test_no_stored_kernel_is_an_error_naming_the_problem_and_the_fix(tmp_path):
    with pytest.raises(NoKernelStored, match=r"problem 'softmax'.*tritongym tune --file KERNEL.py --problem softmax"):
        api.tune("softmax", config=CONFIG, registry=tmp_path / "registry.db")


# --- the command line -----------------------------------------------------------------------------------


def test_tune_command_help_json_and_exit_codes(tmp_path):
    help_text = runner.invoke(app, ["tune", "--help"]).stdout
    for option in ("--budget", "--time-budget", "--strategy", "--strategy-option", "--file", "--problem", "--json"):
        assert option in help_text
    assert "tune" in runner.invoke(app, ["--help"]).stdout
    plugins = json.loads(runner.invoke(app, ["plugins", "--kind", "search_strategy", "--json"]).stdout)
    assert {p["name"] for p in plugins} >= {"exhaustive", "random"}

    db = str(tmp_path / "registry.db")
    base = ["--backend", "triton-cpu", "--trials", "2", "--registry", db]
    missing = runner.invoke(app, ["tune", "relu", *base, "--json"])
    assert missing.exit_code == 1 and "problem 'relu'" in json.loads(missing.stdout)["error"]
    assert runner.invoke(app, ["eval", str(SOLUTIONS / "relu.py"), "-p", "relu", *base]).exit_code == 0

    tuned = runner.invoke(
        app, ["tune", "relu", *base, "--budget", "1", "--strategy", "random", "--strategy-option", "seed=3", "--json"]
    )
    assert tuned.exit_code == 0, tuned.output
    data = json.loads(tuned.stdout)
    assert data["strategy"] == "random" and data["strategy_options"] == {"seed": 3} and data["budget"] == 1
    (relu,) = data["problems"]
    assert relu["status"] == "tuned" and [p["name"] for p in relu["params"]] == ["BLOCK", "num_warps", "num_stages"]
    assert relu["variants"] == 1 and len(relu["records"]) == 2 and relu["speedup"] is None

    late = runner.invoke(app, ["tune", "relu", *base, "--time-budget", "1e-6", "--json"])
    (stopped,) = json.loads(late.stdout)["problems"]
    assert stopped["stopped_by"] == "time_budget" and stopped["variants"] == 0
    assert late.exit_code == 1 and stopped["status"] == "out_of_time"  # the kernel as written alone is no tuning
    assert "give --time-budget more seconds" in stopped["message"]
    assert stopped["evaluated"] == 0  # the kernel as written is always measured, here from the registry
    late_human = runner.invoke(app, ["tune", "relu", *base, "--time-budget", "1e-6"])
    assert late_human.exit_code == 1 and "0/1 problem(s) tuned" in late_human.stdout
    stats = json.loads(runner.invoke(app, ["registry", "stats", "--registry", db, "--json"]).stdout)
    assert stats["tuning_records"] == 2 and stats["evaluations"] == 2

    human = runner.invoke(app, ["tune", "relu", *base, "--budget", "1", "--strategy", "random", "-j", "1"])
    assert human.exit_code == 0 and "answered by the registry" in human.stdout and "no speedup" in human.stdout
    bad = [
        ["tune", "relu", *base, "--strategy", "nope", "--json"],
        ["tune", *base, "--file", str(SOLUTIONS / "relu.py"), "--json"],
        ["tune", "relu", *base, "--strategy", "random", "--strategy-option", "seed", "--json"],
    ]
    for args in bad:
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "error" in json.loads(result.stdout), result.stdout


# --- tuning as feedback ------------------------------------------------------------------------------------


def tuning(source_ms: float | None, best_ms: float | None, best: dict, variants: int = 4) -> ProblemTuning:
    written = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}
    records = [TuningRecord(config=written, kernel_id="k0", strategy="source", status="ok", runtime_ms=source_ms)]
    records.append(TuningRecord(config=best, kernel_id="k1", strategy="exhaustive", status="ok", runtime_ms=best_ms))
    return ProblemTuning(
        problem="matmul",
        status="tuned",
        message="",
        source_kernel_id="k0",
        source_origin="a training turn",
        backend="triton-cuda",
        device_class="H100",
        size="gpu",
        strategy="exhaustive",
        variants=variants,
        best_config=best,
        speedup=source_ms / best_ms if source_ms and best_ms else None,
        timed=source_ms is not None,
        records=records,
    )


def test_the_feedback_line_names_the_speedup_and_only_the_values_that_changed():
    faster = tuning(1.8, 1.0, {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8})
    assert faster.feedback_line() == (
        "tuned: 1.8x faster with BLOCK_M=128, num_warps=8 (4 other configurations tried, every one judged)."
    )
    same = tuning(1.0, 1.0, {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}, variants=1)
    assert same.feedback_line() == (
        "tuned: no faster launch configuration than yours (1 other configuration tried, every one judged)."
    )
    assert tuning(None, None, {"BLOCK_M": 128}).feedback_line() is None  # untimed: cannot say faster


def test_feedback_tuning_skips_an_untimed_backend_and_the_line_reaches_the_rendered_feedback(tmp_path):
    db = tmp_path / "registry.db"
    problem = load_problem("relu", "cpu")
    candidate = api.read_candidate(SOLUTIONS / "relu.py")
    evaluator = api.make_evaluator(CONFIG, db)
    with evaluator:
        feedback = FeedbackTuner(evaluator, budget=2)
        results = evaluator.evaluate_many([(candidate, problem)])
        assert results[0].status == tritongym.Status.ok
        assert feedback.tune_batch([(candidate, problem)], results) == 0  # triton-cpu times nothing
        assert feedback.line_for("relu", results[0]) is None
        assert evaluator.registry.db["tuning_records"].count == 0
        line = tuning(1.8, 1.0, {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8}).feedback_line()
        rendered = render_feedback(results[0], notes=(line,))
    assert "tuned: 1.8x faster with BLOCK_M=128, num_warps=8" in rendered
    assert rendered.index("tuned: 1.8x") < rendered.index("Reward:")


def test_a_run_config_turns_feedback_tuning_on_per_rollout():
    config = load_run_config(overrides={"rollout.tune_feedback": 3, "rollout.tune_feedback_strategy": "random"})
    assert (config.rollout.tune_feedback, config.rollout.tune_feedback_strategy) == (3, "random")
    assert load_run_config().rollout.tune_feedback == 0  # off by default: it costs evaluations
    with pytest.raises(Exception, match="tune_feedback"):
        load_run_config(overrides={"rollout.tune_feedback": -1})


# --- the timed path (run on the GPU machine: python -m pytest -m gpu tests/test_tune.py) ------------------


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_tune_on_triton_cuda_times_every_variant_and_keeps_the_fastest(tmp_path):
    db = tmp_path / "registry.db"
    config = EvalConfig(backend="triton-cuda", size="gpu", trials=3, timeout_s=300)
    assert api.evaluate(SOLUTIONS / "relu.py", "relu", config, db).status == tritongym.Status.ok
    (relu,) = api.tune("relu", budget=4, config=config, registry=db).problems
    assert relu.status == "tuned" and relu.timed and not relu.note
    ok = [r for r in relu.records if r.ok]
    assert all(r.runtime_ms and r.runtime_iqr_ms is not None for r in ok)
    fastest = min(ok, key=lambda r: r.runtime_ms)
    assert relu.best_kernel_id == fastest.kernel_id and relu.best_runtime_ms == fastest.runtime_ms
    assert relu.speedup == pytest.approx(relu.records[0].runtime_ms / fastest.runtime_ms)
    best = api.best("relu", registry=db, backend="triton-cuda")
    assert best.kernel_id == fastest.kernel_id
    assert (best.tuning is None) == (fastest.kernel_id == relu.source_kernel_id)
    again = api.tune("relu", budget=4, config=config, registry=db).problems[0]
    assert again.evaluated == 0 and again.source_kernel_id == relu.source_kernel_id


# --- the baseline: the same kernel under Triton's own @triton.autotune -----------------------------------


def test_the_autotuned_rewrite_moves_the_tuned_values_into_configs_and_the_grid_into_meta():
    discovery = discover(solution("matmul"))
    configs = [discovery.as_written(), {**discovery.as_written(), "BLOCK_M": 128, "num_warps": 8}]
    rewritten = autotuned_source(discovery, configs)
    tree = ast.parse(rewritten)
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "matmul_kernel")
    autotune = kernel.decorator_list[0]
    assert ast.unparse(autotune.func) == "triton.autotune" and ast.unparse(kernel.decorator_list[1]) == "triton.jit"
    listed = next(k.value for k in autotune.keywords if k.arg == "configs")
    assert [ast.unparse(c) for c in listed.elts] == [
        "triton.Config({'BLOCK_M': 64, 'BLOCK_N': 64, 'BLOCK_K': 32}, num_warps=4, num_stages=3)",
        "triton.Config({'BLOCK_M': 128, 'BLOCK_N': 64, 'BLOCK_K': 32}, num_warps=8, num_stages=3)",
    ]
    key = ast.literal_eval(next(k.value for k in autotune.keywords if k.arg == "key"))
    assert key[:3] == ["M", "N", "K"] and all(k.startswith(("M", "N", "K", "stride")) for k in key)
    launch = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript))
    assert not launch.keywords  # BLOCK_* went to the configs; num_warps/num_stages were never passed
    assert ast.unparse(launch.func.slice) == (
        "lambda META: (triton.cdiv(m, META['BLOCK_M']), triton.cdiv(n, META['BLOCK_N']))"
    )
    assert discover(rewritten).space.points  # what tune itself reads back: an autotune list of two points


PARTIAL_SUMS = """
import torch
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        block = 128
        partial = torch.empty(triton.cdiv(x.numel(), block), device=x.device)
        partial_sum_kernel[(partial.numel(),)](x, partial, x.numel(), BLOCK=block)
        return partial.sum()
"""


def test_a_source_whose_block_name_feeds_other_host_code_is_not_rewritten():
    with pytest.raises(VariantError, match=r"`block` \(line 16\) is used outside the launch"):
        autotuned_source(discover(PARTIAL_SUMS), [discover(PARTIAL_SUMS).as_written()])
    conv = discover(solution("conv2d"))  # `grid = (cdiv(..., bm), ...)` named first: moved into the launch
    assert "lambda META: (triton.cdiv(b * h_out * w_out, META['BLOCK_M'])" in autotuned_source(
        conv, [conv.as_written()]
    )
    with pytest.raises(VariantError, match="already uses @triton.autotune"):
        autotuned_source(discover(AUTOTUNED), [{"BLOCK": 64}])


def test_the_autotuned_rewrite_of_relu_is_correct_on_triton_cpu(tmp_path):
    discovery = discover(solution("relu"))
    configs = [discovery.as_written(), {"BLOCK": 256, "num_warps": 2, "num_stages": 3}]
    path = tmp_path / "relu_autotuned.py"
    path.write_text(autotuned_source(discovery, configs))
    result = api.evaluate(path, "relu", CONFIG, tmp_path / "registry.db")
    assert result.status == tritongym.Status.ok, result.message
    (choice,) = result.autotune
    assert choice.kernel == "relu_kernel" and choice.declared == 2
    assert choice.config["BLOCK"] == 1024 and choice.how == "first"  # the interpreter takes the first config


@pytest.mark.parametrize("name", sorted(p.stem for p in SOLUTIONS.glob("*.py")))
def test_every_bundled_solution_has_an_autotuned_rewrite_over_its_own_configuration(name):
    discovery = discover(solution(name))
    rewritten = discover(autotuned_source(discovery, [discovery.as_written()]))
    kernels = {p.kernel for p in discovery.space.params}
    assert {a.kernel for a in rewritten.autotunes} == kernels  # one autotune list per tuned kernel
    assert all(len(a.configs) == 1 for a in rewritten.autotunes)
    listed = {(p.kernel, p.name.split("@")[0].split(".")[-1], p.current) for p in rewritten.space.params}
    assert listed == {(p.kernel, p.name.split("@")[0].split(".")[-1], p.current) for p in discovery.space.params}


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_feedback_tuning_on_triton_cuda_tunes_a_correct_turn_once_and_says_what_it_found(tmp_path):
    config = EvalConfig(backend="triton-cuda", size="gpu", trials=3, timeout_s=300)
    problem = load_problem("relu", "gpu")
    candidate = api.read_candidate(SOLUTIONS / "relu.py")
    evaluator = api.make_evaluator(config, tmp_path / "registry.db")
    with evaluator:
        feedback = FeedbackTuner(evaluator, budget=3)
        results = evaluator.evaluate_many([(candidate, problem)])
        assert results[0].status == tritongym.Status.ok and results[0].speedup is not None
        assert feedback.tune_batch([(candidate, problem)], results) == 1
        assert feedback.tune_batch([(candidate, problem)], results) == 0  # the same kernel is tuned once
        line = feedback.line_for("relu", results[0])
        assert evaluator.registry.db["tuning_records"].count == 4  # the kernel as written and three variants
    assert line is not None and line.startswith("tuned: ") and "3 other configurations tried" in line, line


# --- a model-based strategy, candidate for a built-in (benchmarks/strategies/surrogate.py) ----------------

SURROGATE = Path(__file__).parent.parent / "benchmarks" / "strategies" / "surrogate.py"


def landscape(config: dict) -> float:
    """A runtime surface of the shape the surrogate models (log runtime quadratic in log2 of each value)
    with its minimum far from the centre (BLOCK 256, 8 warps, 4 stages), and configurations that break
    (BLOCK 1024 with 16 warps: 'out of shared memory').  It checks the search machinery on a surface the
    model can represent; whether real kernels are such surfaces is what the GPU benchmark decides."""
    import math

    b, w, s = math.log2(config["BLOCK"]), math.log2(config["num_warps"]), config["num_stages"]
    return math.exp(0.3 * (b - 8) ** 2 + 0.2 * (w - 3) ** 2 + 0.1 * (s - 4) ** 2)


def search(strategy, space: SearchSpace, budget: int) -> list[TuningRecord]:
    """The tuner's loop over a known surface: propose, measure, record, until the budget is spent."""
    records = [TuningRecord(config=space.current(), kernel_id="k", strategy="source", status="ok", runtime_ms=9.0)]
    records[0].runtime_ms = landscape(space.current())
    while len(records) - 1 < budget:
        proposals = strategy.propose(space, records, budget - (len(records) - 1))
        if not proposals:
            break
        for config in proposals[: budget - (len(records) - 1)]:
            broken = config["BLOCK"] == 1024 and config["num_warps"] == 16
            records.append(
                TuningRecord(
                    config=config,
                    kernel_id=config_key(config),
                    strategy=strategy.name,
                    status="runtime_error" if broken else "ok",
                    runtime_ms=None if broken else landscape(config),
                )
            )
    return records


def test_the_surrogate_strategy_finds_a_far_optimum_sooner_than_exhaustive_and_repeats_itself():
    host = PluginHost(extra_plugins=[str(SURROGATE)], load_entry_points=False)
    surrogate = host.create("search_strategy", "surrogate")
    space = SearchSpace(
        params=[
            TuneParam(
                name="BLOCK", kind="constexpr", kernel="k", current=64, values=[16, 32, 64, 128, 256, 1024], where=""
            ),
            TuneParam(name="num_warps", kind="num_warps", kernel="k", current=2, values=[1, 2, 4, 8, 16], where=""),
            TuneParam(name="num_stages", kind="num_stages", kernel="k", current=2, values=[1, 2, 3, 4, 5], where=""),
        ]
    )
    best = min(landscape(space.config_at(i)) for i in range(space.size))
    found = search(surrogate, space, budget=16)
    walked = search(host.create("search_strategy", "exhaustive"), space, budget=16)
    # 16 variants: the surrogate ends within 15% of the optimum (BLOCK 256, 8 warps, 4 stages), nearest-first
    # is still more than twice as slow
    assert min(r.runtime_ms for r in found if r.runtime_ms) <= best * 1.15
    assert min(r.runtime_ms for r in walked if r.runtime_ms) > best * 2
    assert len({config_key(r.config) for r in found}) == len(found)  # never the same configuration twice
    assert [r.config for r in search(surrogate, space, budget=16)] == [r.config for r in found]  # deterministic
    # nothing timed (triton-cpu): it walks the grid nearest first, as exhaustive does
    untimed = [TuningRecord(config=space.current(), kernel_id="k", strategy="source", status="ok")]
    assert surrogate.propose(space, untimed, 3) == host.create("search_strategy", "exhaustive").propose(
        space, untimed, 3
    )


def test_a_deadline_cuts_the_batch_to_what_fits_at_the_pace_measured():
    """On one GPU a batch of 16 random variants (some hitting the 120 s timeout) once ran 400 s past a 60 s
    budget: with a deadline, a batch holds only what the time left allows at the measured pace."""
    from tritongym.core.tune.tuner import batch_size

    assert batch_size(16, None, 5.0, now=0.0) == 16  # no deadline: as many as run in parallel
    assert batch_size(16, 60.0, None, now=0.0) == 16  # nothing judged yet: no pace to go by
    assert batch_size(16, 60.0, 5.0, now=48.0) == 2  # 12 s left at 5 s a variant
    assert batch_size(16, 60.0, 0.5, now=0.0) == 16  # a fast pace: the parallelism is the limit
    assert batch_size(16, 60.0, 5.0, now=59.0) == 1  # always at least one (the deadline is checked before)
