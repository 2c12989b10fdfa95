"""One spelling of a problem source across commands (`--problems SOURCE`), one resolver for a single problem
(what `eval --problem` takes: a suite name, a .py file, SOURCE#NAME), and the old spellings (`problems list
--source`, `problems check SOURCE`, `client submit --problem-file`) kept working, hidden from help, for a
release.  The service's side of `client submit --problem FILE` is in tests/test_service.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
import typer.main
from typer.testing import CliRunner

import tritongym
from tritongym.cli.app import app
from tritongym.service.protocol import problem_fields

runner = CliRunner()
SUITE = Path(tritongym.__file__).parent / "problems"
WIDE = {"COLUMNS": "300"}


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False, env=WIDE)


def command(*path: str) -> click.Command:
    found = typer.main.get_command(app)
    for name in path:
        found = found.commands[name]
    return found


@pytest.fixture
def source(tmp_path) -> Path:
    """A KernelBench-style directory of two problems: relu and a renamed copy of it."""
    directory = tmp_path / "kb"
    directory.mkdir()
    shutil.copy(SUITE / "suite" / "relu.py", directory / "relu.py")
    shutil.copy(SUITE / "suite" / "relu.py", directory / "myrelu.py")
    return directory


@pytest.mark.parametrize("path", [("run",), ("serve",), ("problems", "list"), ("problems", "check")])
def test_every_command_that_takes_a_problem_source_spells_it_problems(path):
    params = {p.name: p for p in command(*path).params}
    assert params["problems"].opts == ["--problems"] and not params["problems"].hidden
    shown = invoke(*path, "--help").stdout
    assert "--problems" in shown
    for old in ("--source", "--suite", "--problem-dir", "SOURCE", "[source]"):
        assert old not in shown, (path, old)


@pytest.mark.parametrize(
    "path, old, shown_as",
    [
        (("problems", "list"), "--source", "--source"),
        (("problems", "check"), "source", "[source]"),
        (("client", "submit"), "--problem-file", "--problem-file"),
    ],
)
def test_the_old_spellings_are_still_parameters_but_hidden(path, old, shown_as):
    """Kept for a release (a script written against them still runs), but not shown to a new reader: not in
    the options or arguments listed, not in the usage line."""
    kept = [p for p in command(*path).params if old in (p.name, *p.opts)]
    assert kept and all(p.hidden for p in kept)
    shown = invoke(*path, "--help").stdout
    assert shown_as not in shown.lower()
    assert "Arguments" not in shown or path == ("client", "submit")  # `problems check` has no visible argument


def test_problems_list_takes_its_old_spelling_with_a_note(source):
    new = invoke("problems", "list", "--problems", str(source), "--json")
    old = invoke("problems", "list", "--source", str(source), "--json")
    assert new.exit_code == old.exit_code == 0, old.output
    assert sorted(p["name"] for p in json.loads(new.stdout)) == ["myrelu", "relu"]
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert "--source is now --problems" in old.stderr and "is now" not in new.stderr


def test_problems_check_takes_its_old_positional_source(source):
    new = invoke("problems", "check", "--problems", str(source), "--only", "myrelu", "--trials", "1", "--json")
    old = invoke("problems", "check", str(source), "--only", "myrelu", "--trials", "1", "--json")
    assert new.exit_code == old.exit_code == 0, old.output
    assert [r["problem_id"] for r in json.loads(old.stdout)["results"]] == ["myrelu"]
    assert [r["problem_id"] for r in json.loads(new.stdout)["results"]] == ["myrelu"]
    assert "is now --problems" in old.stderr


def test_both_spellings_naming_different_sources_is_bad_input(source, tmp_path):
    both = invoke("problems", "list", "--problems", str(source), "--source", str(tmp_path), "--json")
    assert both.exit_code == 2 and "--problems" in json.loads(both.stdout)["error"]
    same = invoke("problems", "list", "--problems", str(source), "--source", str(source), "--json")
    assert same.exit_code == 0, same.output


def test_problems_show_takes_what_eval_takes(source):
    """A suite name, a .py file and SOURCE#NAME all name the same reference here."""
    by_name = invoke("problems", "show", "relu").stdout
    assert "class Model" in by_name
    assert invoke("problems", "show", str(source / "myrelu.py")).stdout == by_name
    assert invoke("problems", "show", f"{source}#myrelu").stdout == by_name
    missing = invoke("problems", "show", f"{source}#nope")
    assert missing.exit_code == 2 and "no problem named 'nope'" in missing.stderr


def test_a_submission_names_a_served_problem_or_carries_the_reference(source):
    """`client submit --problem` and the reward adapters' service client resolve a problem as eval does: a
    name goes to the service as a name; a file or SOURCE#NAME is read here and sent with the candidate."""
    reference = (source / "myrelu.py").read_text()
    assert problem_fields("relu") == {"problem": "relu"}
    assert problem_fields("level1/19_ReLU") == {"problem": "level1/19_ReLU"}
    assert problem_fields(str(source / "myrelu.py")) == {"problem_source": reference, "problem_name": "myrelu"}
    assert problem_fields(f"{source}#myrelu") == {"problem_source": reference, "problem_name": "myrelu"}
    with pytest.raises(tritongym.TritonGymError, match="holds several problems"):
        problem_fields(str(source))
