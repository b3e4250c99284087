# OPEN (found by the fuzzer, seed 1324199, shrunk; the same on ab5f730):
# under llvm (and aot_eager) an input's value differs from eager's after
# `v2[:] = v2` through torch.broadcast_tensors(x1, x0)[1] of an empty
# float64 tensor and a 0-d bool tensor.
import torch
LOG = []

def helper6(a):
    pass

def helper8(a, **kw):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (), generator=g).bool()
    x1 = torch.randn((1,), generator=g, dtype=torch.float64)[1:]
    return [x0, x1]

def fn(x0, x1):
    v2 = torch.broadcast_tensors(x1, x0)[1]
    v2[:] = v2
