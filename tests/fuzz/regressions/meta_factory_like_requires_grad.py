# FIXED (found by scripts/fuzz, seed 777075): `torch.full_like(x0, 7)` of an
# input that requires grad printed `requires_grad` True under every AOT
# backend: the tracer answered the flag from the node's meta, and meta
# inference marked any output of an op with a grad-requiring input. The
# factories shaped like an input (`*_like`, `new_*`) and `detach` make
# tensors outside autograd, as in eager (graph/meta_infer.cpp).
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((3,), generator=g, dtype=torch.float32)
    x0.requires_grad_()
    return [x0]


def fn(x0):
    v5 = torch.full_like(x0, 7)
    v6 = v5.unsqueeze(0)
    print('p', type(v6).__name__, v6.requires_grad, torch.zeros_like(x0).requires_grad,
          x0.new_ones(2).requires_grad, x0.detach().requires_grad, torch.rand_like(x0).requires_grad,
          x0.clone().requires_grad)
    return (v6 * x0, )
