"""`tritongym client ...`: talk to a running `tritongym serve` (service/http_client.py) from the shell.

Exit codes as `tritongym eval`: 0 the candidate(s) ok (or the query answered), 1 a verdict other than ok, a
task the service could not evaluate, one not finished within --timeout, or no kernel stored; 2 bad input
(a missing file, a problem the service does not serve, a wrong token); 3 the service cannot be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from tritongym.cli.common import JsonOpt, PlainHelpGroup, _emit_json, command, err, one_spelling, out
from tritongym.core.errors import ConfigError

client_app = typer.Typer(
    help="Talk to a running `tritongym serve`: submit, wait, best, health.", no_args_is_help=True, cls=PlainHelpGroup
)

UrlOpt = Annotated[
    str | None,
    typer.Option("--url", envvar="TRITONGYM_SERVICE_URL", help="The service (default http://127.0.0.1:8000)."),
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", envvar="TRITONGYM_SERVICE_TOKEN", help="Its bearer token (prefer the environment)."),
]
WaitTimeoutOpt = Annotated[
    float | None, typer.Option("--timeout", help="Seconds to wait for verdicts (default: as long as it takes).")
]


def _client(url: str | None, token: str | None):
    from tritongym.core.errors import ServiceError

    try:
        from tritongym.service.http_client import Client
    except ImportError as exc:
        raise ServiceError(f"tritongym client needs httpx ({exc}): pip install 'tritongym[serve]'") from None
    return Client(url, token)


def _print_task(task) -> None:
    result = task.result
    if result is None:
        style = "red" if task.state.value == "failed" else "yellow"
        out.print(f"[{style}]{task.state.value}[/]  {escape(task.problem)}  task {task.id}", highlight=False)
        if task.error:
            out.print(task.error, highlight=False, markup=False, soft_wrap=True)
        return
    style = "green" if result.status.value == "ok" else "red"
    out.print(
        f"[{style}]{result.status.value}[/]  {escape(result.problem_id)}  kernel {result.kernel_id}  "
        + escape(f"[{result.backend} on {result.device}]")
        + ("  (cached)" if result.cached else "")
        + f"  task {task.id}",
        highlight=False,
    )
    out.print(result.message, highlight=False, markup=False, soft_wrap=True)
    out.print(f"reward {result.reward.describe()}", highlight=False, markup=False)


def _all_ok(tasks) -> bool:
    return all(t.result is not None and t.result.status.value == "ok" for t in tasks)


@client_app.command("health")
@command
def health_command(url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False):
    """The service's backend, device and queue; exit 3 if it cannot be reached."""
    with _client(url, token) as service:
        health = service.health()
    if as_json:
        _emit_json(health.model_dump(mode="json"))
        return
    out.print(
        f"{health.status}: tritongym {health.version}, {health.backend} on {health.device} "
        f"({health.device_class}, size {health.size}), {health.lanes} lane(s); queue {health.queued} queued + "
        f"{health.running} running of {health.capacity}; {health.problems} problems; up {health.uptime_s:.0f} s",
        highlight=False,
    )


@client_app.command("submit")
@command
def submit_command(
    candidate: Annotated[Path, typer.Argument(help="Python file defining ModelNew with Triton kernels.")],
    problem: Annotated[
        str | None,
        typer.Option(
            "--problem",
            "-p",
            help="As eval --problem takes it: a name the service serves, or a .py file or SOURCE#NAME here, whose "
            "reference is sent with the candidate.",
        ),
    ] = None,
    problem_file: Annotated[
        str | None, typer.Option("--problem-file", hidden=True, help="Old spelling of --problem FILE.py.")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait for the verdict (default) or print the task.")
    ] = True,
    timeout: WaitTimeoutOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
):
    """Submit one candidate file; with --wait (default) print its verdict and exit 0 only if it is ok."""
    from tritongym.api import read_candidate
    from tritongym.service.protocol import problem_fields

    spec = one_spelling(problem, "--problem", problem_file, "--problem-file")
    if spec is None:
        raise ConfigError("name the problem: --problem NAME (served by the service), FILE.py or SOURCE#NAME")
    source = read_candidate(candidate).source
    with _client(url, token) as service:
        task = service.submit(source, **problem_fields(spec), origin=str(candidate))
        if wait:
            task = service.wait(task.id, timeout)
    if as_json:
        _emit_json(task.model_dump(mode="json"))
    elif wait:
        _print_task(task)
    else:
        out.print(f"queued task {task.id} ({escape(task.problem)}, position {task.position})", highlight=False)
    raise typer.Exit(0 if not wait or _all_ok([task]) else 1)


@client_app.command("wait")
@command
def wait_command(
    task_ids: Annotated[list[str], typer.Argument(help="Task id(s) that `submit --no-wait` printed.")],
    timeout: WaitTimeoutOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
):
    """Wait for tasks and print their verdicts; exit 0 only if every one is ok (--timeout 0: as they are now)."""
    with _client(url, token) as service:
        tasks = service.wait(task_ids, timeout)
    if as_json:
        _emit_json([t.model_dump(mode="json") for t in tasks])
    else:
        for task in tasks:
            _print_task(task)
    raise typer.Exit(0 if _all_ok(tasks) else 1)


@client_app.command("best")
@command
def best_command(
    problem: Annotated[
        str, typer.Argument(help="As eval --problem takes it: a name, a .py file or SOURCE#NAME (named as stored).")
    ],
    device: Annotated[str | None, typer.Option("--device", help="Device class, e.g. cpu.")] = None,
    backend: Annotated[str | None, typer.Option("--backend", "-b", help="Only kernels judged on this backend.")] = None,
    size: Annotated[str | None, typer.Option("--size", help="Problem size preset: cpu or gpu.")] = None,
    by: Annotated[str, typer.Option("--by", help="runtime, speedup or compile_speedup.")] = "runtime",
    code: Annotated[bool, typer.Option("--code", help="Print the kernel's source.")] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
):
    """The fastest honest kernel the service's registry holds for PROBLEM; exit 1 if it holds none."""
    from tritongym.core.problems import stored_name

    with _client(url, token) as service:
        found = service.best(stored_name(problem), device=device, backend=backend, size=size, by=by)
    if found is None:
        if as_json:
            _emit_json({"error": f"no honest, correct kernel stored for '{problem}'", "exit_code": 1})
        else:
            err.print(f"No honest, correct kernel stored for '{escape(problem)}' on the service.", highlight=False)
        raise typer.Exit(1)
    if as_json:
        _emit_json(found.model_dump(mode="json", exclude=set() if code else {"source"}))
        return
    speed = f"speedup {found.speedup:.3g}" if found.speedup is not None else "untimed"
    out.print(
        f"{escape(found.problem_id)}: kernel {found.kernel_id} (evaluation {found.evaluation_id}) "
        + escape(f"[{found.backend} on {found.device_class}, size {found.size}]")
        + f", {speed}",
        highlight=False,
    )
    if code:
        out.print(found.source, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(client_app, name="client")
