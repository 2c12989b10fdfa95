"""Cold-start SFT tokenisation (`tritongym sft`): a conversation as token ids and a mask of the tokens learned,
for any chat template.

Only assistant text is learned.  The mask comes from rendering prefixes of the conversation with the
tokenizer's own chat template (`render(messages[:i], add_generation_prompt=True)` is where reply i starts,
`render(messages[:i + 1])` is where it ends), so it holds for any template, not only ChatML: role headers,
system and user text are context; each reply's text and the end-of-turn token after it (so the model learns
to stop) are targets.  The rendered conversation is tokenised once, as a whole, as the RL engine tokenises
a prompt, and targets are picked by character offsets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tritongym.core.errors import ConfigError
from tritongym.core.generation import Message
from tritongym.core.learn.sft_data import SFTExample


@dataclass
class TokenizedExample:
    """Token ids of a rendered conversation and a 0/1 mask of the tokens learned."""

    input_ids: list[int]
    mask: list[int]
    truncated: bool = False
    source: str = ""

    @property
    def targets(self) -> int:
        """Tokens the loss counts; the first token is never one (nothing predicts it)."""
        return sum(self.mask[1:])


@dataclass
class _Span:
    """Characters of one learned reply in the rendered text: its content [start, content_end), then the
    template's text after it up to `end`, learned up to the first stop token.  `exact_end`: `end` is
    where the template ends this message (prefix rendering), so a tail without a stop token is the turn's
    end marker and is learned whole."""

    start: int
    content_end: int
    end: int
    exact_end: bool


def _render(tokenizer, messages: list[Message], generation_prompt: bool) -> str:
    if not messages and not generation_prompt:
        return ""
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    except Exception:  # some templates index messages[0]: an empty conversation renders as nothing
        if messages:
            raise
        return ""


def _prefix_spans(tokenizer, messages: list[Message], targets: list[int], full: str) -> list[_Span] | None:
    """Spans from prefix renderings, or None when the template does not render prefixes as prefixes."""
    spans = []
    done = ""
    for i in targets:
        head = _render(tokenizer, messages[:i], generation_prompt=True)
        upto = _render(tokenizer, messages[: i + 1], generation_prompt=False)
        if not (head.startswith(done) and upto.startswith(head) and full.startswith(upto)):
            return None
        segment = upto[len(head) :]
        content = messages[i]["content"]
        # a template that rewrites the reply (trims it, say) leaves no verbatim content: the whole segment is
        # then learned up to its stop token
        content_end = len(head) + len(content) if segment.startswith(content) else len(head)
        spans.append(_Span(len(head), content_end, len(upto), exact_end=True))
        done = upto
    return spans


def _search_spans(messages: list[Message], targets: list[int], full: str, source: str) -> list[_Span]:
    """Spans found by looking for each message's text, in order, in the full rendering: for templates whose
    rendering of a message depends on what follows it (a system prompt moved into the last user message,
    say), where prefixes are not prefixes."""
    spans: list[_Span] = []
    wanted = set(targets)
    position = 0
    for i, message in enumerate(messages):
        content = message["content"]
        if not content:
            continue
        found = full.find(content, position)
        if found < 0:
            if i in wanted:
                raise ConfigError(
                    f"example {source or '?'}: the chat template neither renders conversations prefix by prefix "
                    f"nor keeps assistant message {i} verbatim, so its tokens cannot be located"
                )
            continue
        if spans and spans[-1].end == len(full):
            spans[-1].end = found  # the previous reply's tail ends where the next message's text starts
        if i in wanted:
            spans.append(_Span(found, found + len(content), len(full), exact_end=False))
        position = found + len(content)
    return spans


def _pieces(text: str, spans: list[_Span]) -> list[tuple[str, str]]:
    """(kind, text) pieces covering `text`: context, content and tail."""
    out, position = [], 0
    for span in spans:
        out += [("context", text[position : span.start]), ("content", text[span.start : span.content_end])]
        out.append(("tail", text[span.content_end : span.end]))
        position = span.end
    out.append(("context", text[position:]))
    return [(kind, piece) for kind, piece in out if piece or kind == "tail"]


def _mark_tail(mask: list[int], ids: list[int], tail: list[int], stop_ids: set[int], exact_end: bool) -> None:
    stop = next((k for k, t in enumerate(tail) if ids[t] in stop_ids), None)
    if stop is not None:
        learned = tail[: stop + 1]
    else:
        learned = tail if exact_end else []
    for t in learned:
        mask[t] = 1


def _offset_tokens(tokenizer, text: str, spans: list[_Span], stop_ids: set[int]) -> tuple[list[int], list[int]]:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), encoded["offset_mapping"]
    mask = [0] * len(ids)
    for span in spans:
        tail = []
        for t, (start, _end) in enumerate(offsets):
            # a token that starts in the header and runs into the reply is context: the model never writes it
            if span.start <= start < span.content_end:
                mask[t] = 1
            elif span.content_end <= start < span.end:
                tail.append(t)
        _mark_tail(mask, ids, tail, stop_ids, span.exact_end)
    return ids, mask


def _piece_tokens(tokenizer, text: str, spans: list[_Span], stop_ids: set[int]) -> tuple[list[int], list[int]]:
    """For tokenizers without offsets: tokenise piece by piece, which is how the engine splits a prompt and
    the reply it generates."""
    ids: list[int] = []
    mask: list[int] = []
    exact = iter(span.exact_end for span in spans)
    for kind, piece in _pieces(text, spans):
        piece_ids = list(tokenizer(piece, add_special_tokens=False)["input_ids"]) if piece else []
        first = len(ids)
        ids += piece_ids
        mask += [1 if kind == "content" else 0] * len(piece_ids)
        if kind == "tail":
            _mark_tail(mask, ids, list(range(first, len(ids))), stop_ids, next(exact))
    return ids, mask


def stop_token_ids(tokenizer, model=None) -> set[int]:
    """Tokens that end a reply: the tokenizer's eos and the model's generation eos ids (Llama 3 ends a turn
    with <|eot_id|>, which is not its tokenizer's eos)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, (list, tuple)):
        ids.update(int(e) for e in eos)
    return ids


def tokenize_example(
    tokenizer, example: SFTExample, max_length: int | None = None, stop_ids: Iterable[int] | None = None
) -> TokenizedExample:
    """The conversation rendered with the tokenizer's chat template, tokenised, with mask = 1 exactly on the
    learned replies' tokens and the end-of-turn token after each.

    Kept to its first `max_length` tokens (the prompt comes first and must stay whole for the reply to
    mean anything; a reply cut short still teaches its start)."""
    stop = set(stop_ids) if stop_ids is not None else stop_token_ids(tokenizer)
    messages = example.messages
    targets = example.target_indices()
    full = _render(tokenizer, messages, generation_prompt=False)
    spans = _prefix_spans(tokenizer, messages, targets, full)
    if spans is None:
        spans = _search_spans(messages, targets, full, example.source)
    if getattr(tokenizer, "is_fast", False):
        ids, mask = _offset_tokens(tokenizer, full, spans, stop)
    else:  # a slow tokenizer has no character offsets
        ids, mask = _piece_tokens(tokenizer, full, spans, stop)
    truncated = max_length is not None and len(ids) > max_length
    if truncated:
        ids, mask = ids[:max_length], mask[:max_length]
    return TokenizedExample(input_ids=ids, mask=mask, truncated=truncated, source=example.source)
