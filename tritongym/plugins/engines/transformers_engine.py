"""`transformers`: rollouts from Hugging Face `generate()`, in-process, on the CPU or one GPU.

Per call, conversations are rendered with the tokenizer's chat template and generated `batch_size` at a time,
left-padded.  What is returned, and why:

- **Log-probs** are those of the raw model distribution: `log_softmax` of the unprocessed logits
  (`output_logits=True`), at temperature 1 and before top-p, whatever the sampling settings.  That is what
  vLLM returns by default (`logprobs_mode = "raw_logprobs"`) and what the trainer recomputes
  (`token_rows.sequence_logprobs`), so MRS compares like with like; the two differ only by numerics.
- **Assistant prefill**: a conversation whose last message has role "assistant" is rendered without a
  generation prompt and that message is continued (`continue_final_message=True`): the reply starts right
  after the prefill text, and `prompt_token_ids` end with it.  The returned text excludes the prefill.
- **Stops**: generation ends at an end-of-sequence token (kept as the last of `token_ids`, not in `text`) or
  after the first stop string; the tokens are cut after the token that completes the stop string and the
  text right after the stop string (kept, as vLLM's `include_stop_str_in_output`).  Either is finish
  reason "stop"; `max_tokens` tokens without one is "length".
- **Sampling** follows `SamplingOptions` alone: the checkpoint's `generation_config` (top_k = 50 by
  default in transformers, a repetition penalty, ...) is replaced by a neutral one at `start`.
  temperature 0 is greedy.  With a seed, call n samples under seed + n (the global RNG is forked, not
  disturbed), so a run repeats call for call; the batches of one call continue one random stream (a
  conversation repeated in two batches gives two samples); the outputs depend on how calls are batched.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.generation import Generation, Message, ModelSpec, SamplingOptions
from tritongym.core.interfaces import GenerationEngine
from tritongym.core.learn.model_loading import render_prompt

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch

if TYPE_CHECKING:
    from collections.abc import Sequence


class TransformersOptions(BaseModel):
    """Where the model runs and how many conversations share one `generate()` call."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field(default="auto", description="torch device; auto = cuda if available, else cpu")
    batch_size: int = Field(default=8, ge=1, description="conversations per generate() call")


class TransformersEngine(GenerationEngine):
    """Hugging Face transformers generate(): works on CPU, trainable, returns per-token log-probs."""

    name = "transformers"
    Options = TransformersOptions
    trainable = True

    def __init__(self, options: BaseModel | None = None) -> None:

        super().__init__(options)
        self.model = None
        self.tokenizer = None
        self.sampling: SamplingOptions | None = None
        self.device: torch.device | None = None
        self._eos_ids: list[int] = []
        self._calls = 0

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("transformers") is None:
            return "transformers is not installed: pip install 'tritongym[train]'"
        return None

    # --- life cycle ---------------------------------------------------------------------------------------

    def start(self, model: ModelSpec, sampling: SamplingOptions) -> None:
        import torch
        from transformers import GenerationConfig

        from tritongym.core.learn.model_loading import load_model, load_tokenizer

        device = self.options.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.sampling = sampling
        self.tokenizer = load_tokenizer(model)
        self.model = load_model(model, device=self.device)
        eos = self.model.generation_config.eos_token_id
        eos_ids = [self.tokenizer.eos_token_id] + (list(eos) if isinstance(eos, (list, tuple)) else [eos])
        self._eos_ids = sorted({i for i in eos_ids if i is not None})
        self.model.generation_config = GenerationConfig(
            bos_token_id=self.tokenizer.bos_token_id,
            eos_token_id=self._eos_ids,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        self._calls = 0

    def close(self) -> None:
        import torch

        on_cuda = self.device is not None and self.device.type == "cuda"
        self.model = None
        self.tokenizer = None
        if on_cuda:
            torch.cuda.empty_cache()

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Copy the trainer's weights in (cast to this engine's dtype and device); the parameter names must be
        exactly the model's, after a leading "module." (DistributedDataParallel) is stripped."""
        model = self._require_started()
        weights = {(k[len("module.") :] if k.startswith("module.") else k): v for k, v in state_dict.items()}
        expected = set(model.state_dict())
        missing, unexpected = sorted(expected - set(weights)), sorted(set(weights) - expected)
        if missing or unexpected:
            raise ValueError(
                f"engine '{self.name}': weights do not match the model: "
                f"{len(missing)} missing ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}), "
                f"{len(unexpected)} unexpected ({', '.join(unexpected[:3])}{', ...' if len(unexpected) > 3 else ''})"
            )
        model.load_state_dict(weights, strict=True)

    # --- generation ---------------------------------------------------------------------------------------

    def generate(self, conversations: list[list[Message]]) -> list[Generation]:
        import torch

        self._require_started()
        prompts = [self._render(conversation) for conversation in conversations]
        seed = None if self.sampling.seed is None else self.sampling.seed + self._calls
        self._calls += 1
        out: list[Generation] = []
        size = self.options.batch_size
        devices = []
        if self.device.type == "cuda":
            devices = [self.device.index if self.device.index is not None else torch.cuda.current_device()]
        # one seeded stream for the whole call: the batches after the first continue it, so the same
        # conversation in two batches of a call (samples > batch_size) is two samples, not one twice
        with torch.no_grad(), torch.random.fork_rng(devices=devices, enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            for start in range(0, len(prompts), size):
                out.extend(self._generate_batch(prompts[start : start + size]))
        return out

    def _require_started(self):
        if self.model is None:
            raise RuntimeError(f"engine '{self.name}' is not started: call start(model, sampling) first")
        return self.model

    def _render(self, conversation: list[Message]) -> list[int]:
        return render_prompt(self.tokenizer, conversation)

    def _generate_batch(self, prompts: list[list[int]]) -> list[Generation]:
        import torch

        sampling, tokenizer = self.sampling, self.tokenizer
        pad = tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            mask[row, width - len(prompt) :] = 1
        sample = sampling.temperature > 0
        kwargs: dict = {"do_sample": sample}
        if sample:  # top_k 0 = off (transformers' default is 50)
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        if sampling.stop:
            kwargs["stopping_criteria"] = self._stop_criteria(width)
        result = self.model.generate(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            max_new_tokens=sampling.max_tokens,
            output_logits=True,
            return_dict_in_generate=True,
            **kwargs,
        )
        tokens = result.sequences[:, width:]
        logprobs = torch.stack(
            [
                torch.log_softmax(step.float(), dim=-1).gather(-1, tokens[:, i : i + 1]).squeeze(-1)
                for i, step in enumerate(result.logits)
            ],
            dim=1,
        )
        return [
            self._finish(prompt, tokens[row].tolist(), logprobs[row].tolist()) for row, prompt in enumerate(prompts)
        ]

    def _finish(self, prompt: list[int], tokens: list[int], logprobs: list[float]) -> Generation:
        """Cut one row's tokens at its end (eos, stop string, or max_tokens) and decode them."""
        ended_by_eos = False
        for index, token in enumerate(tokens):
            if token in self._eos_ids:
                tokens, logprobs, ended_by_eos = tokens[: index + 1], logprobs[: index + 1], True
                break
        text = self._decode(tokens)
        cut = _stop_end(text, self.sampling.stop)
        if cut is not None:
            keep = _tokens_until(len(tokens), lambda n: _stop_end(self._decode(tokens[:n]), self.sampling.stop))
            tokens, logprobs, text = tokens[:keep], logprobs[:keep], text[:cut]
            reason = "stop"
        else:
            reason = "stop" if ended_by_eos else "length"
        return Generation(text=text, prompt_token_ids=prompt, token_ids=tokens, logprobs=logprobs, finish_reason=reason)

    def _stop_criteria(self, width: int):
        """Ends a row as soon as the text of its newest tokens holds a stop string (the same test `_finish`
        cuts with, so a row never ends on a stop `_finish` does not see)."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        stops = self.sampling.stop
        tail = 4 * max(len(stop) for stop in stops)  # tokens: a character is at most 4 bytes, a token at least 1

        class StopStrings(StoppingCriteria):
            def __call__(criterion, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
                rows = input_ids[:, width:][:, -tail:].tolist()
                done = [_stop_end(self._decode(row), stops) is not None for row in rows]
                return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

        return StoppingCriteriaList([StopStrings()])

    def _decode(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)


def _stop_end(text: str, stops: Sequence[str]) -> int | None:
    """Where the earliest-ending stop string in `text` ends, or None."""
    ends = [text.find(stop) + len(stop) for stop in stops if stop and stop in text]
    return min(ends) if ends else None


def _tokens_until(count: int, found) -> int:
    """The fewest leading tokens (of `count`) whose text already holds a stop string: binary search, since
    a longer prefix's text extends a shorter one's."""
    low, high = 1, count
    while low < high:
        middle = (low + high) // 2
        if found(middle) is not None:
            high = middle
        else:
            low = middle + 1
    return low


@hookimpl
def register_engines(register):
    register(TransformersEngine)
