"""Small demo models, as lists of layers that ``split_stages`` cuts: for examples, profiling,
benchmarks and tests. Each comes with the loss that trains it."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional


def mlp(layers: int, width: int, seed: int = 0) -> list[nn.Module]:
    """``layers`` blocks of Linear(width, width) + Tanh, deterministic for a seed."""
    torch.manual_seed(seed)
    out: list[nn.Module] = []
    for _ in range(layers):
        out += [nn.Linear(width, width), nn.Tanh()]
    return out


def mlp_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return functional.mse_loss(output, target)


class Block(nn.Module):
    """A pre-norm transformer block (self-attention + MLP), causal."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device, dtype=x.dtype)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Embed(nn.Module):
    def __init__(self, vocab: int, width: int, seq: int) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Parameter(torch.zeros(seq, width))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tokens(ids) + self.positions[: ids.shape[1]]


def transformer(blocks: int, width: int, heads: int, seq: int, vocab: int, seed: int = 0) -> list[nn.Module]:
    """A tiny GPT: embedding, ``blocks`` blocks, norm + vocabulary head (as separate layers)."""
    torch.manual_seed(seed)
    return [Embed(vocab, width, seq), *(Block(width, heads) for _ in range(blocks)),
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, vocab))]


def transformer_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return functional.cross_entropy(logits.flatten(0, 1), target.flatten())
