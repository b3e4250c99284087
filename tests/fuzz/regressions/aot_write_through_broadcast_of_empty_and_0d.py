# FIXED (found by the fuzzer, seed 1324199, shrunk): under llvm (and
# aot_eager) an input's value differed from eager's after `v2[:] = v2`
# through torch.broadcast_tensors(x1, x0)[1] of an empty float64 tensor and
# a 0-d bool tensor. v2 is x0 expanded to no element: eager writes nothing;
# functionalization wrote x0 back as the sum over the broadcast copies,
# which over none is False. AOT's eager-layout run now marks such a view
# (empty, broadcast from a tensor with elements) as one functionalization
# cannot write through, and the graph runs op by op
# (compile/aot/eager_meta.cpp, `empty_broadcast_of`).
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
