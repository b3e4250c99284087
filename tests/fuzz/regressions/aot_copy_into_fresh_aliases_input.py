# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 98): under AOT a fresh tensor
# completely overwritten from an input (`v[...] = x`, same dtype and
# shape) is returned as the input itself: the output aliases the input,
# so writing into the result changes the caller's tensor.
# What was wrong: LibTorch's functional `copy` of a same-shaped source is the source
# itself, so the fresh output's value was the input placeholder; such an
# output is now copied (a `clone` node).
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (graph/aot/eager_meta.cpp).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2, (2, 3), generator=g).bool(), torch.randint(0, 2, (2, 3), generator=g).bool()]


def fn(x0, x1):
    v1 = x1 >= x0
    v1[...] = x0
    return (v1,)
