# FIXED (2026-11-26, branch aotfix; found by the fuzzer, seed 34803, shrunk):
# `v3[...] = x1` makes v3's functional value the input x1 itself, and the
# returned `v3.movedim(0, -1)` was regenerated on it: the output viewed
# the caller's x1. An intermediate base that is an input's value is now
# copied, as a fresh output is.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4,), generator=g, dtype=torch.float32)
    x1 = torch.randn((4,), generator=g, dtype=torch.float32)
    return [x0, x1]

def fn(x0, x1):
    v3 = x0 / x1
    v3[...] = x1
    v11 = v3.movedim(0, -1)
    return (v11,)
