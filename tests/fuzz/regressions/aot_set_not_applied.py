# FIXED (found by the fuzzer, seeds 166, 100077, 100104): under AOT
# `x.set_(other)` on a sliced input was not applied to the caller's
# tensor: it kept its old storage and offset (2, where eager's points at
# the clone's storage at 0). Functionalization sees set_ as a new value,
# not a storage swap; a graph with set_ now runs as captured, op by op
# (compile/aot/boundary.h: a logged fallback counted in backend_fallbacks).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2, 2), generator=g, dtype=torch.float64)[1:]
    x1 = torch.randn((2, 2), generator=g, dtype=torch.float32)[1:]
    x2 = torch.randn((), generator=g, dtype=torch.float64)
    return [x0, x1, x2]



def fn(x0, x1, x2):
    v1 = x1.clone()
    v3 = x1.set_(v1)
    return (v3,)
