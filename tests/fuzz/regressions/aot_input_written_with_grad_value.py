# FIXED (found by the fuzzer, seed 61223, shrunk): under AOT an input
# that does not require grad written with a value that does
# (`v3[...] = x0` after a graph break) requires grad in eager (copy_ gives
# it autograd history) but not compiled: AOT's wrapper copies the new
# value back below autograd. Such a graph now runs as captured
# (compile/aot/capture.cpp: a capture error, a logged fallback).
import torch
LOG = []

def helper4(a, b):
    try:
        return a @ b
    except RuntimeError:
        pass

def helper8(a):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = torch.randint(0, 2, (), generator=g).bool()
    x2 = torch.randn((), generator=g, dtype=torch.float32)
    x0.requires_grad_()
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v3 = x1 // x2
    v5 = helper4(x0, x0)
    v3[...] = x0
    return (v3,)
