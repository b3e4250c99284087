# OPEN (found by the fuzzer, seed 1324067, shrunk; the same on ab5f730):
# under AOT (aot_eager, llvm) the input x0 comes back with another shape
# than eager gives it: x0.unsqueeze_(0) after a narrow view of x0 and a
# clone of that view (stacked afterwards with the view). An input
# metadata mutation with a live view of it.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((2,), generator=g, dtype=torch.float32)
    return [x0]

def fn(x0):
    v1 = x0.narrow(0, 0, 1)
    v4 = v1.clone()
    print('p', type(v4).__name__, v4.requires_grad)
    x0.unsqueeze_(0)
    v5 = torch.stack([v4, v1])
    return {}
