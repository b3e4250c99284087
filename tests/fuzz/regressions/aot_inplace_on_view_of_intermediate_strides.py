# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 201871, shrunk): under AOT `masked_fill_` on a chunk of an intermediate computed from
# a transposed, mutated input: the returned view has the wrong strides.
# What was wrong: the returned view of the intermediate was regenerated with the
# strides of the functional `masked_fill` result instead of the view's.
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []

def helper7(a):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (2, 3, 2), generator=g).bool().transpose(-1, -2)
    return [x0]

def fn(x0):
    v1 = x0.fill_(3)
    v3 = x0.chunk(2, -1)[-1]
    v4 = torch.where(v1 > v3, v1, v3)
    v9 = v4.chunk(2, -3)[-1]
    v9.masked_fill_(v9 > 0, 1)
    return (v9,)
