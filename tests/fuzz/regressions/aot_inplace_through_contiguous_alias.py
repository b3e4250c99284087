# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 202446, shrunk): under AOT `v5 = v2.contiguous()` (v2 itself, already contiguous),
# `v5.logical_not_()`, then a write through another alias: the result
# differs from eager's.
# What was wrong: `fill_` writes the expanded input x1 (stride 0): its
# functional value is a dense tensor that the epilogue cannot copy back
# as eager wrote it. Writes into self-overlapping tensors now fall back to
# the captured graph.
# (compile/aot/eager_meta.cpp finds such writes.)
import torch
LOG = []

def helper6(a, **kw):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = torch.randn((1, 4), generator=g, dtype=torch.float32).expand(4, 4)
    x2 = 3
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v1 = x1.type_as(x0)
    v2 = v1 / 2
    v5 = v2.contiguous()
    v10 = torch.tensor([1.0, 2.0])
    v13 = v5.logical_not_()
    v1.fill_(3)
    v14 = v5.float()
    return v14
