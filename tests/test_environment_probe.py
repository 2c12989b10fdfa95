"""The environment probe tells torch's own wrapping of `torch.manual_seed` from a candidate's.

unsloth's RMSNorm entry point is under `@torch.compiler.disable`; its first call imports `torch._dynamo`, which wraps
`torch.manual_seed` in `_disable_dynamo`, and the field corpus's honest kernel was `hacked` by `environment` ("torch.
manual_seed was replaced").  Run in a fresh interpreter: the import cannot be undone in this one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import functools, json, sys
    import torch
    from tritongym.core.worker.probes import environment_changes, environment_snapshot

    before = environment_snapshot()
    if sys.argv[1] == "dynamo":
        @torch.compiler.disable
        def entry(x):
            return x
        entry(torch.ones(1))
        import torch._dynamo  # noqa: F401  (already imported by the call; explicit for the reader)
    else:  # a candidate's own wrapper, dressed as torch's
        original = torch.manual_seed

        @functools.wraps(original)
        def pinned(seed):
            return original(0)

        torch.manual_seed = pinned
    print(json.dumps(environment_changes(before)))
    """
)


def changes(kind: str) -> list[str]:
    import json

    done = subprocess.run([sys.executable, "-c", SCRIPT, kind], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# slow tier (16 s: two fresh interpreters, one importing torch._dynamo): the fast tier runs the environment probe
# end to end on a candidate that patches torch (tests/hacks/test_hacks.py's patch_synchronize[runtime]) and on
# honest kernels that must pass it (tests/hacks/test_honest.py)
@pytest.mark.slow
def test_torch_dynamos_wrapper_is_no_change_and_a_candidates_wrapper_is():
    assert changes("dynamo") == []
    assert "torch.manual_seed was replaced" in changes("candidate")
