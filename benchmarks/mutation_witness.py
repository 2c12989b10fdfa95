"""The mutation benchmark's independent witness (`benchmarks/mutation.py`): one kernel and its mutants, run beside
the reference on many inputs, in this fresh process, with no tritongym code at all.

Reads a job (JSON) on stdin; writes one JSON line per verdict on stdout: `{"start": id}` before each kernel runs
(a kernel that kills the process is then known), then `{"id", "wrong", "why"}`; the unmutated kernel first
(`__original__`), whose per-input errors every mutant is held against.  A mutant that leaves a sticky CUDA error
ends the process with `CONTEXT_LOST` after its own label, and the parent runs the rest in a fresh one.

For each input (seeds x scales, at the main shape and at each declared extra shape set): `Model` and the kernel's
`ModelNew` built under one seed, every floating parameter and buffer of `Model` moved away from its value (a
module at weight 1 and bias 0 would hide a dropped affine), copied into `ModelNew` by name and shape, then by
equality with `Model`'s entry as built; the reference run in float64 where it can; `torch.empty` and its kin
filled with NaN (a kernel that relies on a fresh buffer's contents shows it).  Error of an output:
max |out - ref| / max |ref| over the finite reference values.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time
import traceback

STARTED = time.perf_counter()  # before torch's import: a witness's seconds are reported by part (`seconds`)

import torch  # noqa: E402

CONTEXT_LOST = 3
"""This process's exit status after a kernel left a sticky CUDA error (an illegal address, an invalid address space):
every later CUDA call here fails with the same error, so the mutants after it would be labelled wrong for its
fault (two equivalent mutants of FlagGems' kron were, after a stride swap crashed).  The parent runs the rest in a
fresh process (`mutation._run_witness`)."""


def context_lost(device: str) -> bool:
    """Whether this process's CUDA context is unusable (a sticky error): a synchronise and one small op fail."""
    if device != "cuda":
        return False
    try:
        torch.cuda.synchronize()
        torch.ones(1, device=device).add_(1).item()
    except Exception:  # noqa: BLE001 - any failure here means the context cannot run the next kernel
        return True
    return False


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def load(name: str, source: str, workdir: str):
    path = os.path.join(workdir, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def poison_empty() -> None:
    """`torch.empty`, `empty_like`, `empty_strided` and `Tensor.new_empty` hand out NaN (floating) or -1."""

    def filled(t):
        with torch.no_grad():
            t.fill_(float("nan") if t.is_floating_point() or t.is_complex() else -1)
        return t

    for name in ("empty", "empty_like", "empty_strided"):
        original = getattr(torch, name)
        setattr(torch, name, lambda *a, _o=original, **k: filled(_o(*a, **k)))
    new_empty = torch.Tensor.new_empty
    torch.Tensor.new_empty = lambda self, *a, **k: filled(new_empty(self, *a, **k))


class FirstConfig:
    """`@triton.autotune` under the interpreter, which cannot time a kernel (the autotuner asks for a GPU driver:
    "0 active drivers"): the kernel runs with its first config, its `reset_to_zero` arguments zeroed and the
    config's `pre_hook` run first, as the autotuner would before each run."""

    def __init__(self, fn, configs, reset_to_zero=None, **_):
        self.fn, self.configs, self.reset_to_zero = fn, list(configs), list(reset_to_zero or [])

    def __getattr__(self, name):
        return getattr(self.fn, name)

    def run(self, *args, **kwargs):
        config = self.configs[0]
        named = {**dict(zip(self.fn.arg_names, args)), **kwargs, **config.kwargs}
        for name in self.reset_to_zero:
            named[name].zero_()
        if config.pre_hook is not None:
            config.pre_hook(named)
        return self.fn.run(*args, **{**config.kwargs, **kwargs})

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def interpret_autotune() -> None:
    """Autotuned kernels run with their first config (`FirstConfig`) when Triton interprets."""
    import triton

    triton.autotune = lambda configs, key=None, **options: lambda fn: FirstConfig(fn, configs, **options)


def flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in flat(v)]
    return [value]


def moved(model: torch.nn.Module, seed: int) -> dict:
    """Every floating parameter and buffer moved away from its value (variances kept positive); returns each
    entry's value as built, by name."""
    generator = torch.Generator().manual_seed(seed ^ 0x3C3C)
    built = {}
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point():
                continue
            built[name] = t.detach().clone()
            noise = torch.randn(t.shape, generator=generator).to(device=t.device, dtype=t.dtype)  # drawn on the CPU
            if "var" in name:
                t.mul_(1.0 + 0.25 * noise.abs())
            else:
                t.add_(0.1 * noise + 0.2 * noise * t)
    return built


def bind(reference: torch.nn.Module, candidate: torch.nn.Module, built: dict) -> None:
    ref_state = reference.state_dict()
    used = set()
    with torch.no_grad():
        for name, t in candidate.state_dict().items():
            r = ref_state.get(name)
            if r is not None and r.shape == t.shape and r.dtype == t.dtype:
                t.copy_(r)
                used.add(name)
        for name, t in candidate.state_dict().items():
            if name in used or not t.is_floating_point():
                continue
            for ref_name, value in built.items():
                if value.shape == t.shape and value.dtype == t.dtype and torch.equal(value, t):
                    t.copy_(ref_state[ref_name])
                    break


def inputs_for(reference, seed: int, scale: float, device: str) -> list:
    torch.manual_seed(seed)
    values = reference.get_inputs()
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            v = v.to(device)
            if v.is_floating_point():
                v = v * scale
        out.append(v)
    return out


def error(out, ref) -> tuple[float | None, str]:
    """(max |out - ref| / max |ref|, why it is wrong outright: '' when it is not)."""
    if not isinstance(ref, torch.Tensor):
        return 0.0, "" if out == ref else f"returned {out!r}, expected {ref!r}"
    if type(out) is not torch.Tensor:
        return None, f"returned a {type(out).__name__}"
    if list(out.shape) != list(ref.shape):
        return None, f"shape {list(out.shape)}, expected {list(ref.shape)}"
    if not ref.is_floating_point():
        return (0.0, "") if torch.equal(out.to(ref.dtype), ref.to(out.device)) else (None, "integer values differ")
    a, b = out.detach().double(), ref.detach().to(out.device).double()  # on the kernel's device: no copy back
    finite = torch.isfinite(b)
    if bool((finite & ~torch.isfinite(a)).any()):
        return None, "NaN or inf where the reference has a number"
    if not bool(finite.any()):
        return 0.0, ""
    scale = b[finite].abs().max().item()
    diff = (a - b)[finite].abs().max().item()
    return diff / max(scale, 1e-300), ""


def main() -> None:
    job = json.loads(sys.stdin.read())
    device = job["device"]
    workdir = job["workdir"]
    sys.path.insert(0, workdir)
    reference = load("witness_reference", job["problem_source"], workdir)
    namespace = vars(reference)
    poison_empty()
    if os.environ.get("TRITON_INTERPRET") == "1":
        interpret_autotune()
    shape_sets = [dict(job["sizes"])] + [{**job["sizes"], **extra} for extra in job["extra_sizes"]]
    inputs = []  # (shape set, seed, scale name, scale)
    for k in range(len(shape_sets)):
        n = job["seeds"] if k == 0 else max(1, job["seeds"] // 4)
        for seed in range(n):
            for name, scale in job["scales"].items():
                inputs.append((k, 1000 + 17 * seed, name, scale))

    def references():
        """The reference's outputs for every input (float64 where the model runs there), made once."""
        found = []
        for k, seed, _, scale in inputs:
            namespace.update(shape_sets[k])
            torch.manual_seed(seed)
            init = reference.get_init_inputs()
            torch.manual_seed(seed)
            model = reference.Model(*init).to(device)
            built = moved(model, seed)
            xs = inputs_for(reference, seed, scale, device)
            with torch.no_grad():
                try:
                    m64 = __import__("copy").deepcopy(model).double()
                    outs = flat(
                        m64(*[x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs])
                    )
                    outs = [o for o in outs]
                except Exception:  # noqa: BLE001 - no float64 path: the reference at its own precision
                    outs = flat(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs]))
            found.append((model, built, init, xs, outs))
        return found

    ready = time.perf_counter()
    refs = references()
    seconds = {"startup": round(ready - STARTED, 2), "references": round(time.perf_counter() - ready, 2)}
    floor = job["floor"]

    def judge(ident: str, source: str, baseline: list | None) -> dict:
        emit({"start": ident})
        errors = []
        try:
            module = load(f"witness_{abs(hash(ident))}", source, workdir)
        except Exception as exc:  # noqa: BLE001
            return {"id": ident, "wrong": True, "why": f"import: {type(exc).__name__}: {exc}"[:300]}
        for i, ((k, seed, name, _), (model, built, init, xs, outs)) in enumerate(zip(inputs, refs)):
            namespace.update(shape_sets[k])
            try:
                torch.manual_seed(seed)
                candidate = module.ModelNew(*init).to(device)
                bind(model, candidate, built)
                with torch.no_grad():
                    got = flat(candidate(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs]))
                if device == "cuda":
                    torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001
                return {"id": ident, "wrong": True, "why": f"{name} seed {seed}: {type(exc).__name__}: {exc}"[:300]}
            where = f"{name} inputs, seed {seed}" + (f", shape set {k}" if k else "")
            if len(got) != len(outs):
                return {"id": ident, "wrong": True, "why": f"{where}: {len(got)} outputs, expected {len(outs)}"}
            per = []
            for j, (o, r) in enumerate(zip(got, outs)):
                err, why = error(o, r)
                if why:
                    return {"id": ident, "wrong": True, "why": f"{where}, output {j}: {why}"}
                per.append(err)
                if baseline is not None:
                    base = baseline[i][j]
                    dtype = str(o.dtype) if isinstance(o, torch.Tensor) else "torch.float64"
                    limit = max(job["wrong_factor"] * base, floor.get(dtype, 1e-5))
                    if err > limit:
                        return {
                            "id": ident,
                            "wrong": True,
                            "why": f"{where}, output {j}: error {err:.3g} against the unmutated kernel's {base:.3g}",
                        }
            errors.append(per)
        worst = max((e for per in errors for e in per if e is not None and math.isfinite(e)), default=0.0)
        return {"id": ident, "wrong": False, "why": f"worst error {worst:.3g}", "errors": errors}

    original = job.get("original_result")
    if original is None:
        began = time.perf_counter()
        original = judge("__original__", job["original"], None)
        original["seconds"] = {**seconds, "original": round(time.perf_counter() - began, 2)}
        if not original["wrong"]:
            # the unmutated kernel must itself be right: within its dtype's floor of the reference everywhere
            # (its float64 error is the baseline mutants are held against)
            worst = max((e for per in original["errors"] for e in per), default=0.0)
            if worst > 0.05:
                original = {**original, "wrong": True, "why": f"unmutated kernel's error {worst:.3g}"}
        emit(original)
    if original["wrong"]:
        return
    for mutant in job["mutants"]:
        try:
            began = time.perf_counter()
            found = judge(mutant["id"], mutant["source"], original["errors"])
            emit({**found, "seconds": round(time.perf_counter() - began, 2)})
        except Exception:  # noqa: BLE001 - the witness's own failure: said, and the mutant left unlabelled
            emit({"id": mutant["id"], "wrong": False, "why": "witness error: " + traceback.format_exc()[-300:]})
        if context_lost(device):
            os._exit(CONTEXT_LOST)  # not sys.exit: tearing down a broken context at exit can crash the process


if __name__ == "__main__":
    main()
