# FIXED (2026-11-26, branch aotfix; found by the fuzzer, seed 35242, shrunk):
# `torch.broadcast_tensors(x0, v2)[1]` expands a one-element v2 (stride 0),
# and `abs_` writes through an unbind of it: functionalization sums the
# broadcast copies. The eager meta run missed it because broadcast_tensors'
# schema has no alias annotation; views are now found by shared storage.
# Such a graph runs as captured.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3,), generator=g, dtype=torch.float32)[1:]
    x1 = torch.randint(-4, 5, (2,), generator=g)
    x2 = torch.randint(-4, 5, (3,), generator=g)[1:]
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v2 = x0[x0 > 0]
    v3 = torch.broadcast_tensors(x0, v2)[1]
    v5 = v3.unbind(0)[0]
    v5.abs_()
    return [v5]
