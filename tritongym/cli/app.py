"""The `tritongym` command line: the typer app, assembled from one module per command group.

Exit codes: 0 success; 1 the work ran but found a failure (a candidate not `ok`, a degenerate problem, no
kernel stored); 2 bad input (unknown problem, bad config, broken plugin); 3 the environment cannot do it
(backend unavailable, registry unreadable).  With `--json`, stdout is valid JSON even on failure
(`{"error": ..., "exit_code": ...}`).  Set TRITONGYM_RAISE_ERRORS=1 to get tracebacks instead.

Each module registers its commands (`register(app)`); none imports the API, the evaluator or the registry at
module level, so `tritongym --help` reads the signatures and nothing else (tests/test_cli_startup.py).
"""

from __future__ import annotations

import gc

import typer

from tritongym.cli import advantages as cli_advantages
from tritongym.cli import best as cli_best
from tritongym.cli import browse as cli_browse
from tritongym.cli import eval as cli_eval
from tritongym.cli import kernel as cli_kernel
from tritongym.cli import plugins as cli_plugins
from tritongym.cli import problems as cli_problems
from tritongym.cli import registry as cli_registry
from tritongym.cli import report as cli_report
from tritongym.cli import run as cli_run
from tritongym.cli import serve as cli_serve
from tritongym.cli import service_client as cli_service_client
from tritongym.cli import train as cli_train
from tritongym.cli import tune as cli_tune
from tritongym.cli.common import PlainHelpGroup

app = typer.Typer(
    help="A gym for LLMs that write fast, honest Triton kernels.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    cls=PlainHelpGroup,
)
# --help lists the commands in this order, then the groups
cli_eval.register(app)  # eval: one candidate against one problem
cli_run.register(app)  # run: many candidates, in parallel sandboxes
cli_best.register(app)  # best: the fastest honest kernel stored, a leaderboard, an export
cli_kernel.register(app)  # kernel: where a stored kernel came from
cli_tune.register(app)  # tune: launch configurations of stored kernels
cli_train.register(app)  # rollouts, train, sft, tts: the commands that load a model
cli_report.register(app)  # report: Fast@p of a stored run
cli_advantages.register(app)  # advantages: what a training step would learn from a batch of turns
cli_plugins.register(app)  # plugins: every registered plugin
cli_serve.register(app)  # serve: the evaluation service over HTTP
cli_problems.register(app)  # problems list|show|check
cli_registry.register(app)  # registry stats
cli_browse.register(cli_registry.registry_app)  # registry browse: registry.db in Datasette
cli_service_client.register(app)  # client: talk to a running service


def main() -> None:
    try:
        app()
    finally:
        # the interpreter's last cycle collection at exit walks every object the command's ~600 modules made: 0.09 s
        # after each command (a warm `eval` takes 2 s in all).  Frozen, it skips them; atexit handlers still run and
        # modules are still cleared (files close) as before.
        gc.freeze()


if __name__ == "__main__":
    main()
