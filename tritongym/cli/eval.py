"""`tritongym eval`: one candidate judged against one problem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from tritongym.cli.common import (
    BackendOpt,
    CompileRefOpt,
    ConfigOpt,
    GpusOpt,
    JsonOpt,
    NoCacheOpt,
    PluginOpt,
    RayOpt,
    RegistryOpt,
    ShapesOpt,
    SizeOpt,
    SkipCheckOpt,
    TimeoutOpt,
    TrialsOpt,
    _emit_json,
    _gpu_list,
    command,
    err,
    eval_config,
    fmt,
    out,
    say_not_stored,
    status_markup,
    stored_fields,
    with_ray,
)
from tritongym.core.errors import RegistryNotStored

if TYPE_CHECKING:  # the models load with the command that prints them: `--help` stays fast
    from tritongym.core.models import EvaluationResult


def _print_result(result: EvaluationResult) -> None:
    out.print(
        f"{status_markup(result)}  {escape(result.problem_id)}  kernel {result.kernel_id}  "
        + escape(f"[{result.backend} on {result.device}]")
        + ("  (cached)" if result.cached else "")
        + (f"  (warm pool, {result.phases['warm_pool_s']:.2f} s)" if "warm_pool_s" in result.phases else "")
    )
    out.print(result.message, highlight=False, soft_wrap=True, markup=False)
    if result.runtime_ms is not None:
        out.print(
            f"runtime {result.runtime_ms:.4g} ms, reference {fmt(result.ref_runtime_ms, '.4g')} ms, "
            f"speedup {fmt(result.speedup)}, PR {fmt(result.pr)}"
            + (
                f"; torch.compile reference {fmt(result.compile_ref_runtime_ms, '.4g')} ms, "
                f"speedup {fmt(result.compile_speedup)}"
                if result.compile_ref_runtime_ms is not None
                else ""
            )
        )
    for choice in result.autotune:
        out.print(f"autotune: {choice.describe()}", highlight=False, markup=False)
    out.print(f"reward {result.reward.describe()}", highlight=False, markup=False)
    if result.error and result.error.traceback and result.status != "timeout":
        err.print(result.error.traceback.rstrip(), highlight=False, markup=False)


def _start_fork_server_early(backend: str | None, config: Path | None, pool: str, ray: str | None) -> None:
    """Start the GPU pool's fork server before this command's own imports, when it will likely make a local pool
    on triton-cuda (`fork_server.start_early`): a cold `eval` started its pool 1.2 s after the CLI did, and every
    process of the pool waits for the fork server's imports.  A guess, never a decision: a config that cannot be
    read here is reported by its loading below, and a fork server no pool adopts (a warm `serve` took the
    candidate) is closed at exit.  Not when a `tritongym serve` is announced here and may take the candidate: the
    fork server would import torch beside this command's hand-over, for nothing."""
    if pool == "require" or ray is not None:
        return
    if pool == "auto":
        from tritongym.api.pool_announcements import announced

        if announced():
            return
    chosen = backend
    if config is not None:
        import tomllib

        try:
            settings = tomllib.loads(Path(config).read_text())
        except (OSError, ValueError):
            return
        if settings.get("executor", "local") != "local":
            return
        chosen = chosen or settings.get("backend")
    if chosen in (None, "auto"):
        chosen = "triton-cuda" if os.path.exists("/dev/nvidiactl") else "triton-cpu"
    if chosen == "triton-cuda":
        from tritongym.core.sandbox.fork_server import start_early

        start_early()


def eval_command(
    candidate: Annotated[Path, typer.Argument(help="Python file defining ModelNew with Triton kernels.")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="Suite name, .py file, or SOURCE#NAME.")],
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
    gpus: GpusOpt = None,
    skip_check: SkipCheckOpt = None,
    no_cache: NoCacheOpt = False,
    compile_reference: CompileRefOpt = False,
    shapes: ShapesOpt = None,
    ray: RayOpt = None,
    config: ConfigOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    pool: Annotated[
        str,
        typer.Option(
            "--pool",
            envvar="TRITONGYM_POOL",
            show_envvar=True,
            help="auto: hand the candidate to a `tritongym serve` running here that judges as this eval would, into "
            "the same registry, if one is; off: always evaluate here; require: exit 3 if none does.",
        ),
    ] = "auto",
    as_json: JsonOpt = False,
):
    """Evaluate one candidate kernel against one problem; exit 0 only if it is ok.

    With a warm pool running (`tritongym serve` on this machine, same backend, options and registry) the candidate
    is judged there, by workers already started; otherwise here, starting only the workers one candidate needs."""
    _start_fork_server_early(backend, config, pool, ray)
    from tritongym import api

    cfg = eval_config(
        config,
        backend=backend,
        size=size,
        trials=trials,
        timeout_s=timeout,
        gpus=_gpu_list(gpus),
        skip_checks=skip_check or None,
        use_cache=False if no_cache else None,
        compile_reference=True if compile_reference else None,
        shapes=shapes,
    )
    cfg = with_ray(cfg, ray)
    try:
        result, unstored = api.evaluate(candidate, problem, cfg, registry, plugin or (), pool=pool), None
    except RegistryNotStored as exc:  # the verdict stands; only its row is missing
        result, unstored = exc.results[0], exc
    if as_json:
        stored = stored_fields(unstored) if not result.unjudged else {"stored": False}
        _emit_json({**result.model_dump(mode="json"), **stored})
    else:
        _print_result(result)
        say_not_stored(unstored)
    # an unjudged verdict (a check could not run) is incomplete: never stored, never an exit 0
    raise typer.Exit(unstored.exit_code if unstored else 0 if result.honest_and_correct else 1)


def register(app: typer.Typer) -> None:
    app.command("eval")(command(eval_command))
