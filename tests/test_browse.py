"""`tritongym registry browse`: the canned queries on a registry made of real evaluations, through sqlite3 and
through Datasette in-process; the command line it builds; the error when Datasette is not installed."""

from __future__ import annotations

import asyncio
import importlib.abc
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import RELU_KERNEL
from typer.testing import CliRunner

from tritongym import api
from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost, reset_host
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.registry.browse import (
    CANNED_QUERIES,
    INSTALL_HINT,
    BrowseUnavailable,
    browse_command,
    database_name,
    metadata,
    require_datasette,
)

PARAMS = {"problem": "relu"}
PASSTHROUGH = RELU_KERNEL.replace(  # static: the sandbox's guard (`forbidden`) refuses the process module
    "        return out\n", "        return x.clamp(min=0) if os.path.exists('/fast') else out\n"
).replace("import torch\n", "import os\nimport torch\n", 1)
NEVER_LAUNCHED = RELU_KERNEL.replace(  # the kernel is a decoy; with the static checks off, a runtime one catches it
    "        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n        return out\n",
    "        return torch.relu(x)\n",
)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """A registry with three real triton-cpu evaluations of relu: the bundled solution (ok), a passthrough a
    static check rejects, and a decoy kernel a runtime check finds hacked."""
    assert PASSTHROUGH != RELU_KERNEL and NEVER_LAUNCHED != RELU_KERNEL
    path = tmp_path_factory.mktemp("browse") / "tg-registry.db"
    problem = load_problem("relu")
    host = PluginHost(load_entry_points=False)
    runtime_checks = {
        name: {}
        for name in host.names("check")
        if name == "structure"
        or host.get("check", name).cls.stage == "runtime"
        and host.get("check", name).cls.default_enabled
    }
    base = dict(backend="triton-cpu", trials=3, timeout_s=120, workers=1)
    cases = [
        ("solution", problem.solution, EvalConfig(**base)),
        ("passthrough", PASSTHROUGH, EvalConfig(**base)),
        ("never_launched", NEVER_LAUNCHED, EvalConfig(**base, checks=runtime_checks)),
    ]
    results = {}
    with pytest.MonkeyPatch.context() as env:  # what conftest's autouse fixture does, for the whole module
        env.setenv("TRITONGYM_LOAD_PLUGINS", "")
        env.delenv("TRITONGYM_PLUGINS", raising=False)
        env.delenv("TRITONGYM_REGISTRY", raising=False)
        reset_host()
        try:
            for name, source, config in cases:
                results[name] = api.evaluate(Candidate(source=source, origin=name), problem, config, registry=path)
        finally:
            reset_host()
    assert results["solution"].status.value == "ok", results["solution"].message
    assert results["passthrough"].status.value == "rejected", results["passthrough"].message
    assert results["never_launched"].status.value == "hacked", results["never_launched"].message
    return path, results


def sqlite_rows(path: Path, query: str, params: dict | None = None) -> list[dict]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        sql = CANNED_QUERIES[query]["sql"]
        return [dict(row) for row in conn.execute(sql, params if ":problem" in sql else {})]
    finally:
        conn.close()


def failed_checks(result) -> list[tuple[str, str]]:
    return [(v.name, v.stage) for v in result.checks if not v.passed]


# --- the canned queries, through sqlite3 ----------------------------------------------------------------


def test_leaderboard_is_the_best_honest_kernel(evaluated):
    path, results = evaluated
    (row,) = sqlite_rows(path, "leaderboard")
    solution = results["solution"]
    assert (row["problem_name"], row["size"], row["device_class"]) == ("relu", "cpu", solution.device_class)
    assert row["kernel_id"] == solution.kernel_id and row["evaluation_id"] == solution.evaluation_id
    assert row["backend"] == "triton-cpu" and row["reward"] == solution.reward.total
    assert (row["honest_kernels"], row["evaluations"]) == (1, 3)
    assert "@triton.jit" in row["source"]


def test_hack_gallery_lists_each_failed_check_with_its_reason(evaluated):
    path, results = evaluated
    rows = sqlite_rows(path, "hack_gallery")
    expected = [
        (name, stage, result.evaluation_id)
        for key in ("passthrough", "never_launched")
        for result in [results[key]]
        for name, stage in failed_checks(result)
    ]
    assert expected and ("forbidden", "static", results["passthrough"].evaluation_id) in expected
    assert any(stage == "runtime" for _, stage, _ in expected)
    assert sorted((r["check_name"], r["stage"], r["evaluation_id"]) for r in rows) == sorted(expected)
    assert [(r["check_name"], r["reason"]) for r in rows] == sorted((r["check_name"], r["reason"]) for r in rows)
    assert results["solution"].evaluation_id not in {r["evaluation_id"] for r in rows}
    forbidden = next(r for r in rows if r["check_name"] == "forbidden")
    assert "os" in forbidden["reason"] and forbidden["line"] is not None and forbidden["status"] == "rejected"
    assert "import os" in forbidden["source"]
    assert {r["status"] for r in rows} == {"rejected", "hacked"}


def test_problem_history_is_every_evaluation_of_the_problem_newest_first(evaluated):
    path, results = evaluated
    rows = sqlite_rows(path, "problem_history", PARAMS)
    by_id = {r.evaluation_id: r for r in results.values()}
    assert [r["evaluation_id"] for r in rows] == sorted(by_id, reverse=True)
    assert [r["created_at"] for r in rows] == sorted((r["created_at"] for r in rows), reverse=True)
    for row in rows:
        result = by_id[row["evaluation_id"]]
        assert row["status"] == result.status.value and row["kernel_id"] == result.kernel_id
        names = [name for name, _ in failed_checks(result)]
        assert row["failed_checks"] == (", ".join(names) if names else None)
    assert sqlite_rows(path, "problem_history", {"problem": "softmax"}) == []


# --- the same queries through Datasette, in-process ---------------------------------------------------


def test_every_canned_query_runs_in_datasette(evaluated):
    from datasette.app import Datasette

    path, _ = evaluated
    db = database_name(path)
    assert db == "tg-registry"

    async def fetch() -> dict:
        ds = Datasette([str(path)], metadata=metadata(db))
        await ds.invoke_startup()
        answers = {}
        page = await ds.client.get(f"/{db}.json")
        assert page.status_code == 200, page.text
        answers["queries"] = sorted(q["name"] for q in page.json()["queries"])
        for query in CANNED_QUERIES:
            response = await ds.client.get(f"/{db}/{query}.json", params={"_shape": "array", **PARAMS})
            assert response.status_code == 200, response.text
            answers[query] = response.json()
        html = await ds.client.get(f"/{db}/problem_history")
        assert html.status_code == 200 and 'name="problem"' in html.text  # the parameter is a form field
        return answers

    answers = asyncio.run(fetch())
    assert answers.pop("queries") == sorted(CANNED_QUERIES)
    for query, rows in answers.items():
        assert rows, f"{query} returned nothing"
        assert rows == sqlite_rows(path, query, PARAMS), query


# --- the command line -----------------------------------------------------------------------------------


def test_browse_command_builds_the_datasette_invocation(tmp_path):
    argv = browse_command(tmp_path / "r.db", tmp_path / "m.json", host="0.0.0.0", port=9000, open_browser=True)
    assert argv == [
        sys.executable,
        "-m",
        "datasette",
        "serve",
        str(tmp_path / "r.db"),
        "--metadata",
        str(tmp_path / "m.json"),
        "--host",
        "0.0.0.0",
        "--port",
        "9000",
        "--open",
    ]
    assert "--open" not in browse_command("r.db", "m.json")
    assert browse_command("r.db", "m.json")[-4:] == ["--host", "127.0.0.1", "--port", "8001"]


def test_registry_browse_serves_the_registry_with_the_canned_queries(evaluated, monkeypatch):
    path, _ = evaluated
    seen = {}

    def fake_serve(argv):  # what it would serve; Datasette itself runs in the SIGTERM test below
        seen["argv"] = argv
        seen["metadata"] = json.loads(Path(argv[argv.index("--metadata") + 1]).read_text())
        return 0

    monkeypatch.setattr("tritongym.cli.browse._serve", fake_serve)
    result = CliRunner().invoke(app, ["registry", "browse", "--registry", str(path), "--port", "8123"])
    assert result.exit_code == 0, result.output
    assert seen["argv"][3:5] == ["serve", str(path)] and "--open" not in seen["argv"]
    assert seen["argv"][-4:] == ["--host", "127.0.0.1", "--port", "8123"]
    assert seen["metadata"] == json.loads(json.dumps(metadata("tg-registry")))
    assert "http://127.0.0.1:8123/tg-registry/leaderboard" in result.output


def test_browsing_a_missing_registry_is_exit_code_3(tmp_path):
    result = CliRunner().invoke(app, ["registry", "browse", "--registry", str(tmp_path / "none.db")])
    assert result.exit_code == 3 and "no registry at" in result.output


class _NoDatasette(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "datasette" or name.startswith("datasette."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def test_without_datasette_browse_says_how_to_install_it(tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "datasette" or n.startswith("datasette.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoDatasette(), *sys.meta_path])
    with pytest.raises(BrowseUnavailable, match="pip install 'tritongym\\[browse\\]'") as info:
        require_datasette()
    assert info.value.exit_code == 3
    with pytest.raises(BrowseUnavailable):
        browse_command("r.db", "m.json")
    registry = tmp_path / "registry.db"
    result = CliRunner().invoke(app, ["registry", "browse", "--registry", str(registry)])
    assert result.exit_code == 3, result.output
    assert INSTALL_HINT in result.output
    assert not registry.exists()  # nothing was opened or created


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc (Linux)")
def test_sigterm_stops_datasette_and_removes_the_temporary_folder(tmp_path):
    """`kill` (SIGTERM) on `tritongym registry browse` used to end Python at once: Datasette went on serving,
    orphaned, and its metadata folder stayed behind.  Real processes: tritongym, then Datasette serving."""
    import os
    import signal
    import subprocess
    import time
    import urllib.request

    db = tmp_path / "r.db"
    Registry(db).close()
    scratch = tmp_path / "tmp"  # the temporary folder goes here, so the test sees it come and go
    scratch.mkdir()
    port = _free_port()
    env = {**os.environ, "TMPDIR": str(scratch), "TRITONGYM_LOAD_PLUGINS": ""}
    argv = [sys.executable, "-m", "tritongym", "registry", "browse", "--registry", str(db), "--port", str(port)]
    log = (tmp_path / "browse.log").open("w")
    browse = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    served: list[int] = []
    try:
        url = f"http://127.0.0.1:{port}/{database_name(db)}.json"
        deadline = time.monotonic() + 120  # Datasette's start on a loaded 2-core machine
        while True:
            assert browse.poll() is None, (tmp_path / "browse.log").read_text()
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "Datasette never answered: " + (tmp_path / "browse.log").read_text()
                time.sleep(0.5)
        served = _children(browse.pid)
        assert len(served) == 1 and _alive(served[0])
        assert [p.name for p in scratch.iterdir() if p.name.startswith("tritongym-browse-")]

        browse.send_signal(signal.SIGTERM)
        assert browse.wait(60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while _alive(served[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(served[0]), "Datasette outlived tritongym"
        assert list(scratch.iterdir()) == []
        with pytest.raises(OSError):
            urllib.request.urlopen(url, timeout=5)
    finally:
        for pid in [*served, browse.pid]:  # only what this test started, by id
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        browse.wait()
        log.close()
