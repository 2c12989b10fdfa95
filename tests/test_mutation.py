"""The mutation benchmark's runner (`benchmarks/mutation.py`): witnesses for several subjects at once, each pinned to
one GPU in turn; `--batch` (every witness, then one judging pass) reports what the subject-by-subject run does;
`--witness-only` leaves the labels in the cache and judges nothing."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutation  # noqa: E402


def _args(jobs: int, backend: str = "triton-cuda") -> argparse.Namespace:
    return argparse.Namespace(
        backend=backend, witness_jobs=jobs, witness_seeds=1, witness_timeout=60.0, witness_cache=None
    )


def _subjects(count: int) -> list[mutation.Subject]:
    return [mutation.Subject(f"suite:k{i}", "suite", f"k{i}", "source") for i in range(count)]


def test_the_witness_gpus_follow_the_parents_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, GPU-ab12,")
    assert mutation.witness_gpus("triton-cuda") == ["3", "GPU-ab12"]
    assert mutation.witness_gpus("triton-cpu") == []  # the witness runs on the CPU: nothing to pin
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert mutation.witness_gpus("triton-cuda") == []


def test_witness_jobs_run_at_once_each_on_its_own_gpu(monkeypatch):
    """Two jobs on GPUs 3 and 5: each pair of witnesses meets inside `run_witness` (a barrier that only two
    concurrent jobs pass) and holds one GPU each; one job per subject's result, every subject once."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    meet, lock, held, seen = threading.Barrier(2, timeout=60), threading.Lock(), [], []

    def fake(subject, problem, mutants, backend, seeds, timeout, cache, gpu):
        with lock:
            held.append(gpu)
        meet.wait()  # both jobs hold their GPU now (a serial run breaks the barrier after its timeout)
        with lock:
            seen.append(sorted(held))
        meet.wait()  # nobody lets go before both have looked
        with lock:
            held.remove(gpu)
        return {"original": {"wrong": False}, "mutants": {}}

    monkeypatch.setattr(mutation, "run_witness", fake)
    subjects = _subjects(4)
    results = list(mutation.witnessed(subjects, {}, {s.name: None for s in subjects}, _args(2)))
    assert sorted(s.name for s, _, _ in results) == [s.name for s in subjects]
    assert seen == [["3", "5"]] * 4, seen


def test_one_witness_job_runs_each_witness_when_asked_unpinned(monkeypatch):
    """`--witness-jobs 1` is the benchmark as it was: the next subject's witness starts only when the caller asks
    for it (after judging the last), and its subprocess sees every GPU the parent does."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    calls = []

    def fake(subject, problem, mutants, backend, seeds, timeout, cache, gpu):
        calls.append((subject.name, gpu))
        return {"original": {"wrong": False}, "mutants": {}}

    monkeypatch.setattr(mutation, "run_witness", fake)
    subjects = _subjects(3)
    results = mutation.witnessed(subjects, {}, {s.name: None for s in subjects}, _args(1))
    assert next(results)[0].name == "suite:k0" and calls == [("suite:k0", None)]
    assert [s.name for s, _, _ in results] == ["suite:k1", "suite:k2"]
    assert calls == [(s.name, None) for s in subjects]


def test_the_cache_answers_a_second_run_without_a_witness(monkeypatch, tmp_path):
    """Labelled mutants are not witnessed again; neither are the mutants of an unmutated kernel the witness found
    wrong (they are excluded), which a judging call after `--witness-only` would otherwise witness anew."""
    calls = []

    def fake(subject, problem, mutants, backend, seeds, timeout, gpu):
        calls.append((subject.name, [m.id for m in mutants]))
        if subject.name == "suite:bad":
            return {"original": {"wrong": True, "why": "the witness could not run the kernel: timed out"}}
        return {"original": {"wrong": False}, "mutants": {m.id: {"wrong": True, "why": "w"} for m in mutants}}

    monkeypatch.setattr(mutation, "_run_witness", fake)
    problem = argparse.Namespace(source="p", sizes={}, extra_sizes=[])
    for name in ("suite:good", "suite:bad"):
        subject = mutation.Subject(name, "suite", "p", "source")
        ms = [mutation.Mutant(f"{name}/op@0", name, "op", "cls", 0, "says", 1, f"source {name}")]
        first = mutation.run_witness(subject, problem, ms, "triton-cpu", 1, 60.0, tmp_path)
        again = mutation.run_witness(subject, problem, ms, "triton-cpu", 1, 60.0, tmp_path)
        assert again == first
    assert calls == [("suite:good", ["suite:good/op@0"]), ("suite:bad", ["suite:bad/op@0"])]
    assert not list(tmp_path.glob("*.partial"))


def test_witness_only_needs_a_cache():
    with pytest.raises(SystemExit, match="--witness-cache"):
        mutation.main(["--witness-only", "--no-honest", "--only", "suite:relu"])


@pytest.mark.slow  # three runs of the benchmark on the interpreter: ~70 s
@pytest.mark.timeout(400)
def test_a_batch_run_reports_what_the_subject_by_subject_run_does(tmp_path):
    """Relu and softmax, three mutants: `--witness-only` (two witness jobs) fills the cache and judges nothing;
    `--batch` then judges every kernel in one pass and the subject-by-subject run, both from the cache, agrees
    with it on every label and verdict."""
    cache = tmp_path / "cache"
    common = ["--backend", "triton-cpu", "--size", "cpu", "--no-honest", "--only", "suite:relu"]
    common += ["--only", "suite:softmax", "--sites", "1", "--witness-seeds", "1", "--limit", "3"]
    common += ["--operator", "mask_le", "--operator", "drop_divisor", "--witness-cache", str(cache)]

    witnessed = mutation.main([*common, "--witness-only", "--witness-jobs", "2", "--out", str(tmp_path / "w.json")])
    assert len(list(cache.glob("*.json"))) == 2  # one file per subject, each written by its own job
    assert sorted(m["id"] for m in witnessed.mutants) == [
        "suite:relu/mask_le@0",
        "suite:softmax/drop_divisor@0",
        "suite:softmax/mask_le@0",
    ]
    assert all(m["witness"] in ("wrong", "equivalent") for m in witnessed.mutants), witnessed.mutants
    assert all(m["status"] == "" for m in witnessed.mutants)
    assert all(o["status"] == "" for o in witnessed.originals.values())
    assert witnessed.summary["complete"] is False and witnessed.summary["overall"]["wrong"] == 0

    batch = mutation.main([*common, "--batch", "--witness-jobs", "2", "--out", str(tmp_path / "b.json")])
    serial = mutation.main([*common, "--out", str(tmp_path / "s.json")])

    def seen(report) -> dict:
        """Each mutant's label and verdict. A mutant whose store overruns its buffer (relu's `mask_le`) has undefined
        behaviour, and its witness says so ("crashed the process"): glibc's abort (`crashed`), a worker stuck in the
        corrupted allocator until its deadline (`timeout`, seen once in CI) or, where the stray element landed in
        slack, a run that goes on and matches (`ok`, seen once in CI).  The two runs are held to agree on its label,
        not on what the overrun did to each run's process."""

        def verdict(m) -> str:
            return "undefined" if m["witness_why"].startswith("crashed the process") else m["status"]

        return {m["id"]: (m["witness"], m["witness_why"], verdict(m)) for m in report.mutants}

    assert seen(batch) == seen(serial), (seen(batch), seen(serial))
    assert {m["id"]: m["witness"] for m in witnessed.mutants} == {m["id"]: m["witness"] for m in batch.mutants}
    assert all(m["status"] for m in batch.mutants if m["witness"] == "wrong")  # every wrong one judged
    originals = {n: (o["witness"], o["status"]) for n, o in batch.originals.items()}
    assert originals == {n: (o["witness"], o["status"]) for n, o in serial.originals.items()}
    assert originals == {"suite:relu": ("right", "ok"), "suite:softmax": ("right", "ok")}
    written = json.loads((tmp_path / "b.json").read_text())
    assert written["summary"]["complete"] is True
    # counted alike but for the mutants of undefined behaviour (above), killed in one run and not in the other
    undefined = sum(m["witness_why"].startswith("crashed the process") for m in serial.mutants)
    ran, again = written["summary"]["overall"], serial.summary["overall"]
    assert ran["wrong"] == again["wrong"] and abs(ran["killed"] - again["killed"]) <= undefined, (ran, again)


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_on_a_gpu_the_witness_runs_kernels_with_parameters():
    """The witness moves each parameter away from its initial value with noise drawn on the CPU; on a GPU the noise
    must follow the parameter to its device (two H200s found every subject with parameters `wrong` as written:
    'Expected all tensors to be on the same device'), which the interpreter runs never see."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from tritongym.core.problems import load_problem

    subject = next(s for s in mutation.suite_subjects("gpu") if s.name == "suite:linear_bias_relu")
    found = mutation.run_witness(subject, load_problem(subject.problem, "gpu"), [], "triton-cuda", 1, 300.0, None)
    assert not found["original"].get("wrong"), found["original"]


def test_a_refusal_at_another_shape_set_is_listed_apart_from_false_rejections():
    """The witness labels a kernel at the problem's own shapes: an unmutated kernel the verdict refuses only at a
    shape set (attorch's NLL loss on two H200s, `generality = "problem_shapes_only"`) is outside its label, so
    it is listed on its own; any other refusal of an unmutated kernel is a false rejection."""
    report = mutation.Report(backend="triton-cpu", size="cpu")
    report.originals = {
        "ok": {"witness": "right", "status": "ok", "generality": "general"},
        "tail": {"witness": "right", "status": "incorrect", "generality": "problem_shapes_only"},
        "false": {"witness": "right", "status": "hacked", "generality": ""},
        "unjudged": {"witness": "right", "status": ""},
    }
    fr = mutation.summarise(report)["false_rejections"]
    assert fr["kernels"] == 3
    assert fr["refused"] == ["false"]
    assert fr["refused_at_other_shapes_only"] == ["tail"]
    assert fr["rate"] == round(1 / 3, 4)


@pytest.mark.gpu
def test_on_a_gpu_a_mutant_that_breaks_the_context_is_wrong_and_the_next_one_still_labelled():
    """A mutant whose kernel leaves a sticky CUDA error (here a load far outside any allocation) is wrong, and the
    mutants after it run in a fresh witness process: four H200s labelled two equivalent mutants of FlagGems' kron
    `wrong` with the error a stride swap before them had left ('operation not supported on global/shared address
    space'), and the judge, which found them right, was charged with two survivors."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from tritongym.core.problems import load_problem

    subject = next(s for s in mutation.suite_subjects("gpu") if s.name == "suite:relu")
    far = subject.source.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs + (1 << 40))")
    assert far != subject.source
    same = subject.source.replace("block = 1024", "block = 2048")
    mutants = [
        mutation.Mutant(f"suite:relu/{name}", "suite:relu", name, "mask_bounds", 0, name, 0, source)
        for name, source in (("far", far), ("same", same))
    ]
    found = mutation.run_witness(subject, load_problem(subject.problem, "gpu"), mutants, "triton-cuda", 1, 300.0, None)
    assert found["mutants"]["suite:relu/far"]["wrong"], found
    assert not found["mutants"]["suite:relu/same"]["wrong"], found["mutants"]["suite:relu/same"]


def test_resume_keeps_the_verdicts_a_cut_run_wrote_and_judges_only_the_rest(monkeypatch, tmp_path):
    """A batch run cut while judging (four H200s lost 600 s of judging that way) keeps what it had judged in its
    JSON; `--resume` reads those verdicts back and judges only the kernels without one: here none is left, so no
    evaluator starts, and the report holds the kept verdicts."""

    def fake(subject, problem, mutants, backend, seeds, timeout, gpu):
        return {"original": {"wrong": False}, "mutants": {m.id: {"wrong": True, "why": "w"} for m in mutants}}

    monkeypatch.setattr(mutation, "_run_witness", fake)
    out = tmp_path / "m.json"
    common = ["--backend", "triton-cpu", "--size", "cpu", "--no-honest", "--only", "suite:relu", "--sites", "1"]
    common += ["--operator", "mask_le", "--batch", "--out", str(out)]
    subject = next(s for s in mutation.suite_subjects("cpu") if s.name == "suite:relu")
    (mutant,) = [m for m in mutation.mutants_of(subject, 1) if m.operator == "mask_le"]
    cut = {
        "backend": "triton-cpu",
        "size": "cpu",
        "originals": {"suite:relu": {"witness": "right", "status": "ok", "message": "ok: kept", "generality": ""}},
        "mutants": [{"id": mutant.id, "witness": "wrong", "status": "incorrect", "message": "incorrect: kept"}],
    }
    out.write_text(json.dumps(cut))

    def no_judging(*_a, **_k):
        raise AssertionError("every verdict was kept: nothing to judge")

    monkeypatch.setattr(mutation.Judge, "__call__", no_judging)
    report = mutation.main([*common, "--resume"])
    assert report.originals["suite:relu"]["status"] == "ok"
    assert [(m["id"], m["status"], m["message"]) for m in report.mutants] == [
        (mutant.id, "incorrect", "incorrect: kept")
    ]
    assert report.summary["overall"] == {"wrong": 1, "killed": 1, "kill_rate": 1.0}
    out.write_text(json.dumps({**cut, "size": "gpu"}))
    with pytest.raises(SystemExit, match="another --out"):
        mutation.main([*common, "--resume"])


def test_labels_from_an_earlier_result_stand_in_for_the_witness_while_its_key_holds(monkeypatch, tmp_path):
    """A fresh checkout has no witness cache, and the witness of 300 mutants costs four GPUs four minutes: the
    result JSON keeps each subject's witness key and each mutant's source digest, so `--labels-from` reuses its
    labels with no witness run.  A changed setting (here the seeds) changes the key and the subject is witnessed
    again."""
    common = ["--backend", "triton-cpu", "--size", "cpu", "--no-honest", "--only", "suite:relu", "--sites", "1"]
    common += ["--operator", "mask_le", "--witness-only", "--witness-cache", str(tmp_path / "cache")]
    first = mutation.main([*common, "--witness-seeds", "1", "--out", str(tmp_path / "first.json")])
    written = json.loads((tmp_path / "first.json").read_text())
    assert written["originals"]["suite:relu"]["witness_key"]
    assert [len(m["digest"]) for m in written["mutants"]] == [24]

    def no_witness(*_a, **_k):
        raise AssertionError("every label was kept: no witness runs")

    monkeypatch.setattr(mutation, "_run_witness", no_witness)
    common = [*common[:-2], "--witness-cache", str(tmp_path / "empty"), "--labels-from", str(tmp_path / "first.json")]
    again = mutation.main([*common, "--witness-seeds", "1", "--out", str(tmp_path / "again.json")])
    assert [(m["id"], m["witness"], m["witness_why"]) for m in again.mutants] == [
        (m["id"], m["witness"], m["witness_why"]) for m in first.mutants
    ]
    assert again.originals["suite:relu"]["witness"] == "right"
    with pytest.raises(AssertionError, match="no witness runs"):
        mutation.main([*common, "--witness-seeds", "2", "--out", str(tmp_path / "other.json")])
