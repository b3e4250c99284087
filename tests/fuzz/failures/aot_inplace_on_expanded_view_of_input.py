# OPEN DEFECT (found by the fuzzer, seed 20297): under AOT `v += v` on a
# one-element slice of a stride-0 expand of a 0-d input writes the input
# three times its value where eager doubles it. Expected to fail.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((), generator=g, dtype=torch.float32)]


def fn(x0):
    v3 = x0.expand(2, *x0.shape)
    v16 = v3.split(1, 0)[0]
    v16 += v16
    return ()
