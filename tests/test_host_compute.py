"""The `host_compute` check and its `host_reads` probe (`plugins/probes/host_reads.py`) as plain functions: the probe
counts the elements the candidate's own file reads out to the host, and only those; the check refuses a forward that
read its data out.  End to end (sandboxed, through Triton's interpreter, whose own numpy conversions must not count),
`tests/hacks/test_hacks.py`'s `numpy_exp_normalize_softmax` and `numpy_matmul_gelu` cases are refused by it and every
honest idiom and suite solution passes it."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import torch

from tritongym.core.errors import CheckUnavailable
from tritongym.core.models import Candidate, Evidence, ProbeCall
from tritongym.plugins.checks.host_compute import HostComputeCheck
from tritongym.plugins.probes import host_reads


class NumpySoftmax(torch.nn.Module):
    def forward(self, x):
        host = np.asarray(x)  # __array__, from this file
        e = np.exp(host - host.max(axis=-1, keepdims=True))
        return torch.from_numpy(e / e.sum(axis=-1, keepdims=True))


class PythonLoop(torch.nn.Module):
    def forward(self, x):
        return torch.tensor([max(v, 0.0) for v in x.tolist()])


class PythonBranches(torch.nn.Module):
    def forward(self, x):
        return torch.stack([v if v > 0 else v * 0 for v in x])  # a truth value per element


class PythonApply(torch.nn.Module):
    def forward(self, x):
        return x.clone().apply_(lambda v: max(v, 0.0))  # a Python callable on every element


class ThroughDlpackAndStorage(torch.nn.Module):
    def forward(self, x):
        host = np.from_dlpack(x)  # __dlpack__
        raw = bytes(x.untyped_storage())  # the storage iterated
        return torch.from_numpy(np.maximum(host, 0.0)) + 0 * len(raw)


class ScalarForGrid(torch.nn.Module):
    def forward(self, x):
        width = int(x.abs().max().item()) + 1  # one scalar: what an honest launch may read
        return torch.relu(x) * (width > 0)


class PrintsItsInput(torch.nn.Module):
    def forward(self, x):
        str(x)  # torch's own formatting reads every element, in torch's file, not the candidate's
        return torch.relu(x)


_NUMPY = torch.Tensor.numpy  # looked up at import, before any probe wraps it: the C method itself
_TOLIST = torch.Tensor.tolist
_ARRAY = torch.Tensor.__array__  # torch's own Python
_STORAGE_TOLIST = torch.UntypedStorage.tolist


class CapturedMethods(torch.nn.Module):
    """Host reads through methods captured before the probe's wrappers existed (`captured_numpy_softmax.py`)."""

    def forward(self, x):
        host = _NUMPY(x)
        listed = _TOLIST(x[0])
        again = _ARRAY(x)
        raw = _STORAGE_TOLIST(x[1].clone().untyped_storage())
        return torch.from_numpy(np.exp(host + again)) + 0 * (len(listed) + len(raw))


class DropsTheProfile(torch.nn.Module):
    def forward(self, x):
        import sys

        sys.setprofile(None)  # blinds the probe's profile function for the rest of the call
        return torch.from_numpy(np.exp(_NUMPY(x)))


def test_the_probe_counts_what_the_candidates_file_reads_out():
    x = torch.randn(8, 64)
    found = host_reads.candidate_side(NumpySoftmax(), [x])
    assert found == {"elements": 512, "calls": {"__array__": 1}, "input_elements": 512}
    assert host_reads.candidate_side(PythonLoop(), [torch.randn(300)])["elements"] == 300
    assert host_reads.candidate_side(PythonBranches(), [torch.randn(100)])["calls"] == {"__bool__": 100}
    assert host_reads.candidate_side(PythonApply(), [x])["calls"] == {"apply_": 1}
    assert host_reads.candidate_side(ThroughDlpackAndStorage(), [x]) == {
        "elements": 512 + 4 * 512,
        "calls": {"__dlpack__": 1, "storage.__iter__": 1},
        "input_elements": 512,
    }
    assert host_reads.candidate_side(ScalarForGrid(), [x])["calls"] == {"item": 1}
    assert host_reads.candidate_side(PrintsItsInput(), [x])["elements"] == 0


def test_the_probe_counts_reads_through_methods_captured_before_it_wrapped_them():
    """Seen where the call is made (the profile function), each once: the C methods bound to their tensor or
    storage, torch's own Python methods entered from the candidate's file."""
    x = torch.randn(8, 64)
    found = host_reads.candidate_side(CapturedMethods(), [x])
    assert found["calls"] == {"numpy": 1, "tolist": 1, "__array__": 1, "storage.tolist": 1}, found
    assert found["elements"] == 512 + 64 + 512 + 4 * 64 and "profile_removed" not in found
    dropped = host_reads.candidate_side(DropsTheProfile(), [x])
    assert dropped["profile_removed"] is True
    assert not _judge(dropped).passed and "removed the profile function" in _judge(dropped).reason


def test_the_probe_leaves_torch_as_it_found_it():
    before = dict(vars(torch.Tensor)), dict(vars(torch.UntypedStorage)), dict(vars(torch.TypedStorage))
    with pytest.raises(RuntimeError, match="probe"):
        host_reads.candidate_side(Raises(), [torch.randn(4)])
    host_reads.candidate_side(NumpySoftmax(), [torch.randn(2, 8)])
    assert (dict(vars(torch.Tensor)), dict(vars(torch.UntypedStorage)), dict(vars(torch.TypedStorage))) == before
    assert torch.Tensor.numpy is torch._C.TensorBase.numpy
    assert sys.getprofile() is None and threading.getprofile() is None


class Raises(torch.nn.Module):
    def forward(self, x):
        x.numpy()
        raise RuntimeError("raised inside the probe")


def _judge(value=None, error=""):
    evidence = Evidence(probes=[ProbeCall(probe="host_reads", trial=0, value=value, error=error)])
    return HostComputeCheck().judge(evidence, Candidate(source=""), None)


def test_the_check_refuses_a_forward_that_read_its_data_out():
    refused = _judge({"elements": 512, "calls": {"__array__": 1}, "input_elements": 512})
    assert not refused.passed and "read 512 tensor elements out to the host (__array__ x1" in refused.reason
    assert _judge({"elements": 1, "calls": {"item": 1}, "input_elements": 512}).passed  # a scalar for a grid
    assert _judge({"elements": 63, "calls": {"tolist": 1}, "input_elements": 63}).passed  # under MIN_ELEMENTS
    assert _judge({"elements": 100, "calls": {"tolist": 1}, "input_elements": 10**6}).passed  # lengths, large input
    raised = _judge(error="RuntimeError: only when probed")
    assert not raised.passed and "raised when called again" in raised.reason
    with pytest.raises(CheckUnavailable):
        _judge(error="could not import probe target 'x:y' in the worker (ImportError: no)")
    with pytest.raises(CheckUnavailable):
        HostComputeCheck().judge(Evidence(), Candidate(source=""), None)
    with pytest.raises(CheckUnavailable):
        _judge({"elements": "many"})
