"""`@triton.autotune` inside the worker: which config the candidate's kernels ran with, and on triton-cpu a
policy that lets them run at all.

**Recording (every backend).**  `LaunchRecorder.install` (launches.py) wraps `Autotuner.run` before any
candidate exists, around `AutotuneLog.before`/`after`, and `prune_configs` with `pruning`: each time one
of the candidate's autotuned kernels settles on a config for a new tuning key, the kernel's name, the
config (its kwargs, then `num_warps`, `num_stages`, and `num_ctas`/`maxnreg` when set), how many configs
it chose among after its own `prune_configs_by`, and Triton's `bench_time` are kept as an
`AutotuneChoice`.  A verdict then says which variant of the kernel it judged and timed, and what the
choice cost.  A call that tunes nothing costs the wrapper a few attribute reads (it also runs inside
eagerly timed calls on triton-cuda).

On triton-cuda the autotuner benchmarks on the kernel's first call, which is the first correctness trial:
the GPU worker runs every trial (same inputs, so the same tuning key) before it times anything, so the
benchmarking never lands in a timed sample; its cost is `autotune_s`.  A tuning that happens during timing
anyway (a key the trials did not produce) is labelled `timing` and noted in the timing report.

**The interpreter policy (triton-cpu only).**  Triton's interpreter cannot time a kernel, and the
autotuner's default benchmarker asks for a GPU driver (`0 active drivers`), so every autotuned kernel
failed there.  `install_interpreter_policy` makes it deterministic instead: the kernel runs with the FIRST
config left after its own pruning (`early_config_prune`, then `perf_model`/`top_k`, which orders by the
model's estimate), and nothing is benchmarked (a `do_bench` the kernel passes is not called either).
The limit: a config other than that first one is never run, so a bug that only another config has is not
seen on triton-cpu; `tritongym tune` evaluates every config as its own variant for that.

The policy wraps `Autotuner.__init__`: every autotuner built afterwards gets a benchmarker that never asks
for a driver (Triton 3.0 to 3.2 asked for one in the constructor, i.e. when the candidate is imported, and
later versions on the first tuning), Triton's on-disk autotune cache off (its key asks the driver for the
target), and a mark that makes the `prune_configs` wrapper (`pruning`, which also counts the configs left
on every backend) hand back only the first config.  With one config left, newer Triton (3.9) skips
benchmarking altogether; older versions (3.6 among them) "benchmark" it with the untimed benchmarker.
Every attribute of Triton's the policy relies on is looked up with a guard; when one is missing the policy
is not installed and Triton is left as it is (autotuned kernels then fail as they did before), and no
wrapper raises an error of its own into the candidate's call.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from tritongym.core.models import AutotuneChoice

MAX_CHOICES = 32  # per evaluation: a kernel re-tuned for every call cannot grow the evidence without bound
_PRUNED = "_tritongym_pruned"  # set on an Autotuner by the prune_configs wrapper: configs left after pruning
_INTERPRETED = "_tritongym_first_config"  # set on an Autotuner built under the interpreter policy


def interpreting() -> bool:
    """Whether Triton runs kernels through its interpreter (TRITON_INTERPRET, as Triton itself reads it)."""
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except Exception:  # noqa: BLE001 - Triton without `knobs` (3.2 among them) reads the variable as "1"
        return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _untimed_bench(kernel_call, quantiles=None, **_ignored):
    """The interpreter's benchmarker: runs nothing and says every config costs the same (0 ms).

    Only reached by Triton versions that benchmark even a single remaining config; with the pruning
    wrapper there is exactly one, so the time is never compared with anything."""
    return [0.0] * len(quantiles) if quantiles else 0.0


def install_interpreter_policy(autotuner_cls: Any = None) -> str | None:
    """Make autotuned kernels run their first config after pruning, without timing; interpreter mode only.

    Returns None when installed (or already installed, or not needed because Triton is not interpreting),
    else why Triton was left alone.  `autotuner_cls` defaults to Triton's `Autotuner`."""
    if not interpreting():
        return None
    if autotuner_cls is None:
        try:
            from triton.runtime.autotuner import Autotuner as autotuner_cls
        except Exception as exc:  # noqa: BLE001 - no autotuner to fix
            return f"triton.runtime.autotuner.Autotuner cannot be imported ({type(exc).__name__}: {exc})"
    name = getattr(autotuner_cls, "__name__", "the autotuner")
    init = getattr(autotuner_cls, "__init__", None)
    if getattr(init, _INTERPRETED, False):
        return None
    if not callable(getattr(autotuner_cls, "prune_configs", None)) or not callable(getattr(autotuner_cls, "run", None)):
        return f"{name} has no prune_configs/run to wrap (Triton's internals differ)"
    try:
        names = list(inspect.signature(init).parameters)
    except (TypeError, ValueError) as exc:
        return f"{name}.__init__ has no readable signature ({exc})"
    if "do_bench" not in names:
        return f"{name}.__init__ takes no do_bench (Triton before 3.0?)"
    autotuner_cls.prune_configs = pruning(autotuner_cls.prune_configs)
    autotuner_cls.__init__ = _untimed_init(init, names.index("do_bench") - 1)  # index among args after self
    return None


def _untimed_init(original, do_bench_at: int):
    def __init__(self, *args, **kwargs):
        if len(args) > do_bench_at:
            if args[do_bench_at] is None:
                args = (*args[:do_bench_at], _untimed_bench, *args[do_bench_at + 1 :])
        elif kwargs.get("do_bench") is None:
            kwargs["do_bench"] = _untimed_bench  # Triton 3.0-3.2 asked the driver for one right here
        original(self, *args, **kwargs)
        try:
            vars(self)["do_bench"] = _untimed_bench  # a cached_property (3.3+) or a plain attribute: replaced
            if hasattr(self, "_do_bench"):
                self._do_bench = _untimed_bench
            if getattr(self, "cache_results", False):
                self.cache_results = False  # the on-disk cache keys on the GPU target, which asks for a driver
            setattr(self, _INTERPRETED, True)  # from here on `pruning` keeps only the first config
        except Exception:  # noqa: BLE001 - an Autotuner that refuses attributes keeps Triton's behaviour
            pass

    setattr(__init__, _INTERPRETED, True)
    return __init__


def pruning(original):
    """Wrap `Autotuner.prune_configs`: note how many configs are left (every backend), and under the
    interpreter policy hand back only the first of them.  Idempotent."""
    if getattr(original, "_tritongym_pruning", False):
        return original

    def prune_configs(self, *args, **kwargs):
        pruned = original(self, *args, **kwargs)
        try:
            setattr(self, _PRUNED, len(pruned))
            if getattr(self, _INTERPRETED, False) and len(pruned) > 1:
                return list(pruned)[:1]
        except Exception:  # noqa: BLE001 - whatever Triton returned, it gets it back
            pass
        return pruned

    prune_configs._tritongym_pruning = True  # type: ignore[attr-defined]
    return prune_configs


def base_function(kernel: Any) -> Any:
    """The Python function under an Autotuner/Heuristics/JITFunction chain (None if there is none)."""
    fn = kernel
    for _ in range(16):
        if inspect.isfunction(fn):
            return fn
        fn = getattr(fn, "fn", None)
        if fn is None:
            return None
    return None


def config_facts(config: Any) -> dict[str, bool | int | float | str | None]:
    """A Triton `Config` as plain values: its kwargs, then num_warps, num_stages, num_ctas/maxnreg when set."""
    facts: dict[str, bool | int | float | str | None] = {}
    kwargs = getattr(config, "kwargs", None)
    for name, value in kwargs.items() if isinstance(kwargs, dict) else ():
        facts[str(name)] = _plain(value)
    for name in ("num_warps", "num_stages"):
        if getattr(config, name, None) is not None:
            facts[name] = _plain(getattr(config, name))
    if getattr(config, "num_ctas", 1) not in (None, 1):
        facts["num_ctas"] = _plain(config.num_ctas)
    if getattr(config, "maxnreg", None) is not None:
        facts["maxnreg"] = _plain(config.maxnreg)
    return facts


def _plain(value: Any) -> bool | int | float | str | None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:200]


class AutotuneLog:
    """The choices the candidate's autotuned kernels made, in order (`MAX_CHOICES` at most).

    `is_own(tuner)` says whether an Autotuner belongs to the candidate, `when()` names the call in
    progress; both are asked only when something was tuned, so a call that tunes nothing costs a few
    attribute reads."""

    def __init__(self, is_own: Callable[[Any], bool], when: Callable[[], str]) -> None:
        self.is_own, self.when = is_own, when
        self.choices: list[AutotuneChoice] = []
        self._single: set[int] = set()  # ids of single-config autotuners already recorded

    def clear(self) -> None:
        self.choices.clear()
        self._single.clear()

    def dump(self) -> list[dict]:
        """Plain dicts (what crosses the candidate child's `weights_only` pipe)."""
        return [c.model_dump() for c in self.choices]

    @staticmethod
    def before(tuner: Any) -> tuple[int, Any]:
        """What `after` compares with: the tuning cache's size and the last `bench_time` object."""
        try:
            return len(tuner.cache), vars(tuner).get("bench_time")
        except Exception:  # noqa: BLE001
            return -1, None

    def after(self, tuner: Any, snapshot: tuple[int, Any]) -> None:
        """Record the configs `tuner` chose for tuning keys new since `snapshot`; never raises."""
        try:
            size = snapshot[0]
            if size < 0 or len(self.choices) >= MAX_CHOICES:
                return
            if len(tuner.cache) > size:
                if self.is_own(tuner):
                    self._tuned(tuner, snapshot)
            elif id(tuner) not in self._single and len(getattr(tuner, "configs", ())) == 1:
                self._single.add(id(tuner))  # Triton skips its cache (and any choice) for a single config
                if self.is_own(tuner):
                    self._record(tuner, tuner.configs[0], 1, "only", None)
        except Exception:  # noqa: BLE001 - recording must never break the candidate's call
            pass

    def _tuned(self, tuner: Any, snapshot: tuple[int, Any]) -> None:
        size, bench_before = snapshot
        pruned = vars(tuner).pop(_PRUNED, None)
        n = int(pruned) if isinstance(pruned, int) else len(getattr(tuner, "configs", ()))
        bench = vars(tuner).get("bench_time")
        if getattr(tuner, _INTERPRETED, False):
            how, seconds = ("first" if n > 1 else "only"), None
        elif bench is not bench_before and isinstance(bench, (int, float)):
            how, seconds = "benchmarked", float(bench)
        else:
            how, seconds = ("only" if n <= 1 else "cached"), None
        for key in list(tuner.cache)[size:]:
            self._record(tuner, tuner.cache[key], n, how, seconds)

    def _record(self, tuner: Any, config: Any, n: int, how: str, seconds: float | None) -> None:
        if len(self.choices) >= MAX_CHOICES:
            return
        self.choices.append(
            AutotuneChoice(
                kernel=getattr(base_function(tuner), "__name__", type(tuner).__name__),
                config=config_facts(config),
                configs=n,
                declared=len(getattr(tuner, "configs", ())) or 1,
                how=how,
                autotune_s=seconds,
                when=self.when(),
            )
        )


def phase_text(phase: Any) -> str:
    """`("trial", 0)` -> `trial 0`; None -> `` (outside any trial or probe: import, __init__, the harness)."""
    if phase is None:
        return ""
    if isinstance(phase, tuple):
        return " ".join(str(p) for p in phase)
    return str(phase)
