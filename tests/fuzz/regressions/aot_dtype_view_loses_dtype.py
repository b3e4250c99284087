# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 20262): under AOT `x.view(dtype)`
# (a dtype-reinterpreting view) of a float64 input, combined with another
# view of it, returns a float64 tensor where eager returns int64.
# What was wrong: views were regenerated with `as_strided` on the base, which keeps
# the base's dtype; a view's dtype is now kept (`view(dtype)` first).
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 2, 1), generator=g, dtype=torch.float64).transpose(-1, -2)]


def fn(x0):
    v2 = x0.view(torch.int64)
    v4 = v2[:]
    s6 = bool(x0.any())
    v7 = torch.maximum(v2, v4)
    return v7
