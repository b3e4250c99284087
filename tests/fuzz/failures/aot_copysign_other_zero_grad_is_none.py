# OPEN, expected to fail (round 16's campaign on the final build, static
# seed 9971406, shrunk by the fuzzer; fails on main's build of 752b252 too):
# x1 is a 0-d leaf that requires grad; `erf(x2).copysign(x1)` of an empty
# bool x2 is the output. Eager's copysign formula gives `other` the
# gradient zeros_like(other), which does not read the incoming gradient:
# x1.grad is 0.0. The compiled call leaves x1.grad None. Not analysed in
# round 16 (found at its end); likely the rule that an input whose
# gradient reads no incoming gradient is one only unused ops read (round
# 11's "gradients through unused ops", which gives such inputs None).
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
