"""What every `tritongym` command shares: the consoles, the common options, JSON output and the error wrapper
that turns a `TritonGymError` into one line (or a JSON object) and its exit code."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from tritongym.core.errors import ConfigError, RegistryNotStored, TritonGymError

if TYPE_CHECKING:  # the models load with the commands that print them
    from tritongym.core.models import EvaluationResult

# Off a terminal (pipes, CI logs) rich would wrap tables at 80 columns; results tables need more.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def _plain_help(command: click.Command) -> click.Command:
    """`command` with its help, and its parameters' help, escaped for rich markup (once); hidden arguments left
    out of its usage line.

    Typer renders help through rich markup, where `[ray]` or `[batch, seq, embed]` is a style tag and
    vanishes: `--ray`'s hint read `pip install 'tritongym'`.  Our help is plain text, brackets included."""
    if not getattr(command, "_tritongym_plain_help", False):
        command.help = escape(command.help) if command.help else command.help
        command.short_help = escape(command.short_help) if command.short_help else command.short_help
        for param in command.params:
            if getattr(param, "help", None):
                param.help = escape(param.help)  # type: ignore[attr-defined]  # options and typer's arguments
            if param.param_type_name == "argument" and getattr(param, "hidden", False):
                # an old spelling kept for a release: typer leaves it out of the list, not out of the usage line
                param.get_usage_pieces = lambda ctx: []  # type: ignore[method-assign]
        command._tritongym_plain_help = True  # type: ignore[attr-defined]
    return command


class PlainHelpGroup(TyperGroup):
    """A command group (pass as `typer.Typer(cls=PlainHelpGroup)`) whose help, and every subcommand's it
    hands out, is plain text to rich: square brackets in a docstring or an option's help are kept."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        return None if command is None else _plain_help(command)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _plain_help(self)
        super().format_help(ctx, formatter)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
PluginOpt = Annotated[
    list[str] | None,
    typer.Option("--plugin", help="Load a plugin module or .py file (repeatable; also TRITONGYM_PLUGINS)."),
]
RegistryOpt = Annotated[
    Path | None,
    typer.Option("--registry", envvar="TRITONGYM_REGISTRY", help="registry.db path (default: ./registry.db)"),
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file (see README).")]
BackendOpt = Annotated[str | None, typer.Option("--backend", "-b", help="Backend name, or 'auto'.")]
SizeOpt = Annotated[str | None, typer.Option("--size", help="Problem size preset: cpu, gpu or auto.")]
TrialsOpt = Annotated[int | None, typer.Option("--trials", help="Correctness trials (distinct seeds).")]
ShapesOpt = Annotated[
    str | None,
    typer.Option(
        "--shapes",
        help="Correctness at extra shape sets: auto (declared, else derived), declared, or off (main shape only).",
    ),
]
TimeoutOpt = Annotated[float | None, typer.Option("--timeout", help="Seconds before a candidate is killed.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Re-evaluate even if the registry knows it.")]
CompileRefOpt = Annotated[
    bool,
    typer.Option(
        "--compile-reference",
        help="Also time torch.compile(reference) (GPU backends) and report compile_speedup beside the eager speedup.",
    ),
]
GpusOpt = Annotated[
    str | None, typer.Option("--gpus", help="GPU indices for triton-cuda, comma separated, e.g. 0,1 (default: all).")
]
SkipCheckOpt = Annotated[
    list[str] | None,
    typer.Option("--skip-check", help="Switch this check off (repeatable); `tritongym plugins` lists them."),
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run the sandboxes on Ray actors (one per GPU): 'local' starts Ray here for the run, 'auto' joins "
        "the cluster `ray start --head` runs here, or the head's address (pip install 'tritongym[ray]').",
    ),
]
ProblemsOpt = Annotated[
    str | None,
    typer.Option(
        "--problems", help="Problem source: the suite (default), a KernelBench directory, a .jsonl or .parquet file."
    ),
]
"""The one spelling of a problem source (a set of problems) in every command that takes one; a single problem is
`--problem` (or an argument) and takes what `load_problem` takes: a name, a .py file or SOURCE#NAME."""
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-j", help="Parallel sandboxes (default: CPUs).")]


def parse_assignments(items: list[str] | None, flag: str, example: str, form: str = "key=value") -> dict:
    """`["a.b=3", "c=['x']"]` -> {"a.b": 3, "c": ["x"]}: each value read as TOML, and taken as a string
    when it is not TOML, so `name=demo` works without quotes."""
    from tritongym.core.config import tomllib

    values: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} takes {form}, e.g. {flag} {example}; got {item!r}")
        try:
            values[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            values[key.strip()] = value
    return values


def _gpu_list(text: str | None) -> list[int] | None:
    """`--gpus 0,1` as indices; a malformed list is bad input (exit 2), named as such."""
    if text is None:
        return None
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--gpus takes comma-separated GPU indices such as 0,1; got {text!r}") from None
    if not gpus or any(g < 0 for g in gpus):
        raise ConfigError(f"--gpus takes comma-separated GPU indices such as 0,1; got {text!r}")
    return gpus


def with_ray(config, address: str | None):
    """The EvalConfig with `--ray ADDRESS` applied (its other `[ray]` settings kept), or as it was."""
    if address is None:
        return config
    return config.model_copy(update={"executor": "ray", "ray": config.ray.model_copy(update={"address": address})})


def _emit_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def command(fn):
    """Turn user-facing errors into one line (or a JSON object) and a meaningful exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TritonGymError as exc:
            if os.environ.get("TRITONGYM_RAISE_ERRORS"):
                raise
            if kwargs.get("as_json"):
                _emit_json({"error": str(exc), "error_type": type(exc).__name__, "exit_code": exc.exit_code})
            else:
                err.print(f"[bold red]Error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)  # [x] is text
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def eval_config(config, **overrides):
    """The EvalConfig of `--config` (or the defaults) with the flags given on the command line applied."""
    from tritongym.core.config import load_config

    return load_config(config, **overrides)


STATUS_STYLE = {"ok": "green", "incorrect": "yellow", "hacked": "magenta", "rejected": "magenta"}


def status_markup(result: EvaluationResult) -> str:
    """A verdict's status, coloured for rich (green ok, yellow incorrect, magenta hacked or rejected, red else)."""
    return f"[{STATUS_STYLE.get(result.status.value, 'red')}]{result.status.value}[/]"


def fmt(value, spec: str = ".3g") -> str:
    """A number for a table cell; `-` for a value that was not measured."""
    return "-" if value is None else format(value, spec)


def stored_fields(unstored: RegistryNotStored | None) -> dict:
    """What `--json` adds to verdicts: whether the registry kept them and, when not, the error as every
    failing command reports it (`error`, `error_type`, `exit_code`)."""
    if unstored is None:
        return {"stored": True}
    return {"stored": False, "error": str(unstored), "error_type": type(unstored).__name__, "exit_code": 3}


def say_not_stored(unstored: RegistryNotStored | None) -> None:
    """Tell stderr that verdicts were reached but the registry did not keep them (and why)."""
    if unstored is not None:
        err.print(f"[bold red]Not stored:[/] {escape(str(unstored.reason))}", highlight=False, soft_wrap=True)


def emit_record(record, as_json: bool, code: bool) -> bool:
    """`--json` (the source included only with `--code`) or `--code` alone (the bare source, for a file or a
    pipe) for a record with a `source`; whether either was asked for and written."""
    if as_json:
        _emit_json(record.model_dump(mode="json", exclude=set() if code else {"source"}))
    elif code:
        sys.stdout.write(record.source if record.source.endswith("\n") else record.source + "\n")
    return as_json or code


def one_spelling(value, flag: str, old_value, old_flag: str):
    """The value of an option given under its spelling (`flag`) or under the old one it replaced (`old_flag`,
    kept hidden for a release): the old one still works, with a note on stderr naming the new spelling; both at
    once is bad input unless they agree."""
    if old_value is None:
        return value
    err.print(f"{old_flag} is now {flag} (the old spelling goes in a later release)", highlight=False, markup=False)
    if value is not None and value != old_value:
        raise ConfigError(f"{flag} and {old_flag} (its old spelling) name different things: give {flag} only")
    return old_value
