"""Which generated tokens of a response are its code: the span an estimator such as HRD splits on.

TritonRL's Hierarchical Reward Decomposition (REFERENCE.md) gives the reasoning (plan) tokens of a
response one advantage and its code tokens another.  The code span is exactly what the gym evaluated: the
fenced block `interaction.extract_code` takes from the assistant prefill + response, fences included.
Every other generated token (the plan before it, any text after it, the end-of-sequence token) is a plan
token; a response without code has no code tokens.

Tokens are mapped to characters by decoding prefixes of the sampled ids with the trainer's tokenizer, the
same ids the trainer scores, never re-tokenised text: token k covers the characters
`[len(decode(ids[:k])), len(decode(ids[:k + 1])))` and is a code token when that range overlaps the block.
Two binary searches find the first and last such token, so a response costs about 2·log2(n) decodes.
Where a token splits a multi-byte character the boundary can be off by that one token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tritongym.core.learn.interaction import extract_code


def _first_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The smallest k in [low, high] with predicate(k), for a predicate false then true; `high` if none."""
    while low < high:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle + 1
    return low


def code_token_mask(decode: Callable[[Sequence[int]], str], token_ids: Sequence[int], prefill: str = "") -> list[bool]:
    """One flag per generated token: True inside the fenced block the extractor takes from prefill + response.

    `decode` turns token ids into text as the engine did (special tokens skipped).  A block opened in the
    prefill (`assistant_prefill = "```python\\n"`) starts at the first generated token."""
    count = len(token_ids)
    if count == 0:
        return []
    text = decode(token_ids)
    span = extract_code(prefill + text).span
    if span is None:
        return [False] * count
    start, end = max(span[0] - len(prefill), 0), span[1] - len(prefill)
    if end <= start:  # the block lies wholly in the prefill
        return [False] * count

    def chars(k: int) -> int:
        return len(decode(token_ids[:k])) if k < count else len(text)

    first = _first_true(lambda k: chars(k + 1) > start, 0, count - 1)
    stop = _first_true(lambda k: chars(k) >= end, first + 1, count)
    return [first <= k < stop for k in range(count)]
