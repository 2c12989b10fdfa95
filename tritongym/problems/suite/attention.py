"""Multi-head self-attention block: fused QKV projection, softmax(Q K^T / sqrt(d)) V per head, output
projection. Input and output are [batch, seq, embed]; no mask, no dropout.

The QKV weight is drawn with std 1/sqrt(embed) (larger than nn.Linear's default) so that the
attention scores have unit spread: the softmax is then clearly peaked rather than nearly uniform,
and the output depends on which keys each query attends to.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "block"

BATCH = 8
SEQ = 512
EMBED = 512
NUM_HEADS = 8

SIZES = {
    "cpu": {"BATCH": 2, "SEQ": 80, "EMBED": 32, "NUM_HEADS": 2},
    "gpu": {"BATCH": 8, "SEQ": 512, "EMBED": 512, "NUM_HEADS": 8},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 1, "SEQ": 40}, {"BATCH": 3, "SEQ": 37}],
    "gpu": [{"BATCH": 4, "SEQ": 256}, {"BATCH": 3, "SEQ": 193}],
}


class Model(nn.Module):
    def __init__(self, embed: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed, 3 * embed, bias=False)
        self.proj = nn.Linear(embed, embed)
        nn.init.normal_(self.qkv.weight, std=embed**-0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, e = x.shape
        h = self.num_heads
        # [b, s, 3 * e] -> [3, b, h, s, head_dim]
        q, k, v = self.qkv(x).reshape(b, s, 3, h, e // h).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, s, e))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, NUM_HEADS]
