# FIXED (2026-11-26, branch aotfix; was an open defect found by the fuzzer, seed 201091, shrunk): under AOT `floor_divide_` on a chunk of a tensor computed from an
# expanded input gives values eager does not.
# What was wrong: the returned chunk was regenerated with the strides of the
# functional `floor_divide` result instead of the view's.
# AOT now takes eager's metadata from a run of the captured graph on meta
# tensors with eager's semantics (compile/aot/eager_meta.cpp).
import torch
LOG = []

def helper2(a, b):
    return torch.where(a > 0, a, b)

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (2, 1, 1), generator=g).expand(2, 4, 1)
    return [x0]

def fn(x0):
    v3 = helper2(x0, x0)
    v4 = v3.chunk(2, -3)[-1]
    v4.floor_divide_(2)
    return v4
