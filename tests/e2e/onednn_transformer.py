"""Transformer inference paths end to end (issue 41 item 4, the xfmr
helper's changes): a Linear on a 3-d or 4-d input (addmm, then a view
back to [..., N]) with its activation fused as a oneDNN post-op after the
view (gelu erf and tanh, relu, silu; jit/onednn_plan.cpp), and
`masked_fill` with a 0-dim value tensor (GPT's
`att.masked_fill(pad == 0, torch.tensor(-1e9))`) as a fused kernel
operand (jit/lower_pointwise.cpp) instead of ATen's op between the
attention's kernels; nn.MultiheadAttention's inference fast path
(`_native_multi_head_attention`, ViT's attention) decomposed into linears,
bmm and softmax (graph/passes/decompose.cpp) so those run as oneDNN steps.
Whole blocks with causal, padding (masked_fill and
additive) and no masks, dropout p=0, an odd head dim, compiled against
eager (values and strides), their q, k, v read by the oneDNN matmuls
through their strides (no head-split copies, jit/onednn_matmul.h); a value tensor of 1 dim raises ATen's error.
Under the llvm backend a child process's output_code log shows the fused
steps, and TRACEJIT_ONEDNN=0 gives the same values."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, EXACT, check, check_raises, finish
from onednn_child import LAUNCHER, check_onednn_on_and_off



class Mlp(nn.Module):
    def __init__(self, dim, act):
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim), act

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm block: attention with `mask` in {"causal", "pad_fill", "additive", "none"}, dropout p=0."""

    def __init__(self, dim, heads, ctx, mask):
        super().__init__()
        self.heads, self.mask = heads, mask
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.0)
        self.mlp = Mlp(dim, nn.GELU())
        self.register_buffer("tril", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def attn(self, x, pad):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.mask in ("causal", "pad_fill"):
            att = att.masked_fill(self.tril[:, :, :T, :T] == 0, float("-inf"))
        if self.mask == "pad_fill":
            att = att.masked_fill(pad[:, None, None, :T] == 0, torch.tensor(-1e9))
        if self.mask == "additive":
            att = att + (1.0 - pad[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        att = F.dropout(self.drop(F.softmax(att, dim=-1)), p=0.0, training=False)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x, pad):
        x = x + self.attn(self.ln1(x), pad)
        return x + self.mlp(self.ln2(x))


class EncoderBlock(nn.Module):
    """torchvision's ViT block: nn.MultiheadAttention (batch first; its inference fast path is
    `_native_multi_head_attention`, which the llvm backend decomposes), then the MLP."""

    def __init__(self, dim, heads, need_weights=False, cross=False, key_mask=False):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
        self.mlp = Mlp(dim, nn.GELU())
        self.need_weights, self.cross, self.key_mask = need_weights, cross, key_mask

    def forward(self, x, pad):
        y = self.ln1(x)
        kv = y * 0.5 if self.cross else y
        mask = (pad == 0) if self.key_mask else None
        y, _ = self.attn(y, kv, kv, need_weights=self.need_weights, key_padding_mask=mask)
        x = x + y
        return x + self.mlp(self.ln2(x))


def mlps():
    torch.manual_seed(3)
    acts = [nn.GELU(), nn.GELU(approximate="tanh"), nn.ReLU(), nn.SiLU()]
    return [Mlp(96, a).eval() for a in acts]


def fill_softmax(att, m1, m2):
    """Two masked_fills (a number, then a 0-dim tensor) and a softmax: one fused kernel on llvm."""
    return torch.softmax(att.masked_fill(m1, float("-inf")).masked_fill(m2, torch.tensor(-1e9)), dim=-1)


def inputs():
    torch.manual_seed(4)
    x3, x4 = torch.randn(4, 33, 96), torch.randn(2, 3, 22, 96)
    # dim 90, 6 heads: head dim 15 (odd)
    blocks = [Block(90, 6, 40, mask).eval() for mask in ("causal", "pad_fill", "additive", "none")]
    xb = torch.randn(5, 37, 90)
    pad = torch.ones(5, 37, dtype=torch.long)
    pad[1, -6:] = 0
    att = torch.randn(3, 4, 29, 29)
    m1 = torch.rand(1, 1, 29, 29) > 0.7
    m2 = torch.rand(3, 1, 1, 29) > 0.8
    encoders = [EncoderBlock(90, 6).eval(), EncoderBlock(90, 6, need_weights=True).eval(),
                EncoderBlock(90, 6, cross=True).eval(), EncoderBlock(90, 6, key_mask=True).eval()]
    return (x3, x4), blocks + encoders, (xb, pad), (att, m1, m2)


def run_all(compile_fn):
    (x3, x4), blocks, block_in, fill_in = inputs()
    out = []
    with torch.no_grad():
        for m in mlps():
            f = compile_fn(m)
            out += [f(x3), f(x4)]
        for b in blocks:
            out.append(compile_fn(b)(*block_in))
        out.append(compile_fn(fill_softmax)(*fill_in))
    return out


def close(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if a.shape != b.shape or a.stride() != b.stride():
        return False
    return torch.equal(a, b) if EXACT else torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def main():
    eager = run_all(lambda f: f)
    compile_fn = lambda f: tracejit.compile(f, backend=BACKEND)  # noqa: E731
    compiled = run_all(compile_fn)
    names = [f"Mlp({act}) on a {rank}-d input" for act in ("gelu", "gelu tanh", "relu", "silu") for rank in (3, 4)]
    names += [f"a transformer block, mask {m}" for m in ("causal", "pad_fill", "additive", "none")]
    names += [f"a ViT encoder block (nn.MultiheadAttention{kind})"
              for kind in ("", ", need_weights", ", cross-attention", ", key_padding_mask")]
    names += ["masked_fill by a number and by a 0-dim tensor, softmax"]
    for name, want, got in zip(names, eager, compiled):
        check(close(got, want), f"{name}: eager's values and strides")
    check(close(run_all(compile_fn), eager), "... and again (cached primitives)")

    # a value tensor of 1 dim: ATen's error, compiled as in eager
    att, m = torch.randn(2, 8, 8), torch.rand(2, 8, 8) > 0.5
    bad = torch.tensor([-1e9])
    e = check_raises(RuntimeError, lambda: att.masked_fill(m, bad), "eager: masked_fill by a 1-dim value tensor")
    c = check_raises(RuntimeError, lambda: compile_fn(lambda a, k, v: a.masked_fill(k, v) * 2)(att, m, bad),
                     "compiled: the same error")
    check(e is not None and c is not None and str(e) == str(c), "... with eager's message")
    # a float64 0-dim value into float32: eager converts the item with an overflow check
    f = compile_fn(lambda a, k, v: a.masked_fill(k, v) + 1)
    v64 = torch.tensor(-1e30, dtype=torch.float64)
    check(close(f(att, m, v64), att.masked_fill(m, v64) + 1), "a float64 0-dim value into float32")
    big = torch.tensor(-1e39, dtype=torch.float64)
    e = check_raises(RuntimeError, lambda: att.masked_fill(m, big), "eager: a float64 value past float32's range")
    c = check_raises(RuntimeError, lambda: f(att, m, big), "compiled: the same error")
    check(e is not None and c is not None and str(e) == str(c), "... with eager's message")
    v32 = torch.tensor(float("-inf"))
    check(close(f(att, m, v32), att.masked_fill(m, v32) + 1), "a float32 -inf value")

    if BACKEND == "llvm" and os.path.exists(LAUNCHER):
        def check_log(flag, lines):
            steps = [s for s in lines if "oneDNN step" in s and ": linear" in s]
            kernels = [s for s in lines if s.startswith("kernel ") or "kernel cache hit for" in s]
            check(any("masked_fill_masked_fill__softmax" in s for s in kernels),
                  f"TRACEJIT_ONEDNN={flag}: both masked_fills and the softmax in one kernel")
            if flag == "0":
                check(not steps, "TRACEJIT_ONEDNN=0: no oneDNN step")
                return
            for act in ("+gelu(", "+gelu_tanh(", "+relu(", "+silu("):
                check(any(" view=[2,3,22,384] +bias " + act in s for s in steps),
                      f"a Linear's bias and {act[1:-1]} after its view are post-ops (4-d input)")
                # the Mlp alone on a 3-d input: compiled whole (its output, fc2's view of addmm's result, is eager's
                # view of an intermediate), no longer op by op
                check(any(" view=[4,33,384] +bias " + act in s for s in steps),
                      f"a Linear's bias and {act[1:-1]} after its view are post-ops (3-d input, the graph's output "
                      "a view)")
            check(sum(1 for s in steps if " view=[5,37,360]" in s and "+gelu(" in s) == 8,
                  "each block's MLP: the gelu a post-op")
            # the traced blocks' attention reads q, k, v through their strides: no head-split copies
            check(sum(1 for s in lines if "oneDNN step bmm" in s and " view=[5,6,37,37] a-strided b-strided" in s) == 4,
                  "each block's q @ kᵀ reads q and k through their strides")
            check(sum(1 for s in lines if "oneDNN step bmm" in s and
                      " view=[5,6,37,15] permuted=[0,2,1,3] b-strided" in s) == 4,
                  "each block's att @ v reads v through its strides, the heads merged by the primitive")
            # the decomposed fast path's q kᵀ: 3-d, no view after it (the traced blocks' have one)
            check(sum(1 for s in lines if "oneDNN step bmm" in s and ": matmul +scale(0.258199" in s) == 1,
                  "the one self-attention fast path without weights asked for is decomposed into oneDNN "
                  "matmuls, the scale fused")

        check_onednn_on_and_off("onednn_transformer", eager, close, check_log)

    finish()


if __name__ == "__main__":
    main()
