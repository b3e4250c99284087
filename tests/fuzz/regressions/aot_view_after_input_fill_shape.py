# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 203682, shrunk): under AOT an input written in place (`fill_`) then viewed
# (`unsqueeze(0).detach()`) and returned has the wrong shape.
# What was wrong: the view's geometry was taken from the functional value of
# `detach()`, replayed on the fill's result, not from eager's view.
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3,), generator=g, dtype=torch.float32)[1:]
    x1 = torch.randint(-4, 5, (2, 2, 2), generator=g)[::2]
    return [x0, x1]

def fn(x0, x1):
    x1.fill_(3)
    v15 = x1.unsqueeze(0)
    v17 = v15.detach()
    return (v17,)
