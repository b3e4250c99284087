# FIXED (2026-11-26, branch aotfix; found by the fuzz slice, seed 21139,
# shrunk by hand): `x0.addcmul_(v2, v2)` where v2 is a strided view of x0
# itself. Eager's kernel reads elements of v2 after writing them through x0,
# so its result depends on the order it visits them; the functional
# `addcmul` reads the old values: different values in x0 and the output.
# AOT now finds in-place ops that read, through another view, memory they
# write (compile/aot/eager_meta.cpp) and runs such a graph as captured.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 2, 2), generator=g, dtype=torch.float64)[1:]
    return [x0]


def fn(x0):
    v2 = x0.transpose(0, -1)[0]
    x0.addcmul_(v2, v2)
    return x0
