"""The CLI starts without the heavy libraries: they are imported only by the commands that need them.

Each check runs in a fresh interpreter (this test process has long since imported torch).  The timings
themselves live in benchmarks/cli_startup.py; what is asserted here is the cause of a fast start.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "triton", "transformers", "accelerate", "datasette", "matplotlib", "vllm", "ray", "trl", "pandas")


def run_and_list_heavy(code: str, cwd=None) -> tuple[list[str], str]:
    """Run `code` in a fresh interpreter: the heavy libraries it left imported, and what it printed."""
    probe = f"{code}\nimport sys\nprint('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    printed, _, heavy = done.stdout.rpartition("HEAVY=")
    return [m for m in heavy.strip().split(",") if m], printed


def heavy_modules_after(code: str) -> list[str]:
    return run_and_list_heavy(code)[0]


def test_importing_the_cli_imports_no_heavy_library():
    assert heavy_modules_after("import tritongym.cli") == []


HELP_NEVER_USES = (
    "tritongym.api",
    "tritongym.core.eval.evaluate",
    "tritongym.core.registry.store",
    "sqlite_utils",
    "prometheus_client",  # /metrics only: imported by the service, never by the CLI's help
)


@pytest.mark.parametrize(
    "argv", [["--help"], ["registry", "browse", "--help"], ["tune", "--help"], ["best", "--help"], ["serve", "--help"]]
)
def test_help_imports_neither_the_api_nor_the_evaluator_nor_sqlite_utils(argv):
    """`--help` reads only the commands' signatures: the API, the evaluator, the registry and its sqlite-utils
    cost 0.2 s of a 0.44 s start and are imported by the commands that run, never by help (typer itself may
    load pydantic for an option's type; that is not ours to defer)."""
    code = (
        f"import sys\nsys.argv = ['tritongym', *{argv!r}]\nfrom tritongym.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"print('LOADED=' + ','.join(m for m in {HELP_NEVER_USES!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Usage" in done.stdout
    assert done.stdout.rpartition("LOADED=")[2].strip() == ""


def test_loading_every_builtin_plugin_imports_no_heavy_library():
    # `tritongym plugins` and every `eval` load the plugin host: estimators and engines import torch lazily
    code = "from tritongym.core.plugins import get_host\nassert get_host().all()"
    assert heavy_modules_after(code) == []


def test_the_public_api_is_lazy_but_complete():
    assert heavy_modules_after("import tritongym") == []
    every_name = "import tritongym\nassert all(getattr(tritongym, n) is not None for n in tritongym.__all__)"
    subprocess.run([sys.executable, "-c", every_name], check=True)


def test_a_cached_eval_needs_no_torch(tmp_path):
    """The registry answers a repeated `tritongym eval`: nothing in that path may import torch."""
    import shutil
    from pathlib import Path

    import tritongym

    solution = Path(tritongym.__file__).parent / "problems" / "solutions" / "relu.py"
    shutil.copy(solution, tmp_path / "relu.py")
    argv = ["eval", "relu.py", "--problem", "relu", "--backend", "triton-cpu", "--registry", "r.db", "--trials", "1"]
    env_code = "import os\nos.environ['TRITON_INTERPRET'] = '1'\n"
    run = (
        f"{env_code}import sys\nsys.argv = ['tritongym', *{argv!r}]\nfrom tritongym.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
    )
    first = subprocess.run([sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    heavy, printed = run_and_list_heavy(run, cwd=tmp_path)
    assert "(cached)" in printed, printed
    assert heavy == []
