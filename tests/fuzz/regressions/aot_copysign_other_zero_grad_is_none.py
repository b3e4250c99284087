# FIXED (round 17; round 16's campaign on its final build, static seed
# 9971406, shrunk by the fuzzer; failed on main's build of 5312a1e): x1 is a
# 0-d leaf that requires grad; `erf(x2).copysign(x1)` of an empty bool x2 is
# the output, and `x1.sum()` is logged. Eager's copysign formula gives
# `other` the gradient zeros_like(other), which reads no incoming gradient:
# x1.grad is 0.0. The compiled call left x1.grad None: an input gets None
# when every tangent its gradient reads is absent (round 11's rule for
# inputs only unused outputs reach), and x1's gradient read only the logged
# sum's tangent (absent: the loss does not use LOG), copysign's part none.
# An input's tangents now also take those of every output whose autograd
# graph reaches it, as eager's engine runs each node a used output reaches
# (compile/aot/capture.cpp, outputs_reaching).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (), generator=g).bool()
    x1 = torch.randn((), generator=g, dtype=torch.float32)
    x2 = torch.randint(0, 2, (0,), generator=g).bool()
    x1.requires_grad_()
    return [x0, x1, x2]

def fn(x0, x1, x2):
    v3 = torch.erf(x2)
    v8 = v3.copysign(x1)
    LOG.append(x1.sum())
    return (v8,)
