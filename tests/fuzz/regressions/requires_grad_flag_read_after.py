# FIXED (found by the fuzzer, seed 40041, once `requires_grad_` was no
# longer left out): `x0.requires_grad_(); print(x0.requires_grad)` printed
# False on every backend where eager prints True: the tracer answers
# `.requires_grad` from the value's meta, and meta inference of
# requires_grad_ kept the old flag. The tracer now sets it
# (tracer/torch_ops.cpp, call_aten).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((1, 2), generator=g, dtype=torch.float32), torch.randn((3,), generator=g)]


def fn(x0, x1):
    x0.requires_grad_()
    print('p', x0.requires_grad)
    v = x1.requires_grad_(False)
    LOG.append(v.requires_grad)
    return (x0 * 2, v)
