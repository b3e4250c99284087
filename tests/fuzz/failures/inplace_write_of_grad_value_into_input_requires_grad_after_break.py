# OPEN, expected to fail (round 17's campaign, static seed 9979195, shrunk by
# the fuzzer; fails on main's build of 5312a1e too; 9979603 is the same): x1
# requires grad and `x0[0] = x1` writes it into x0, an input that does not:
# in eager x0 requires grad from then on (its grad_fn CopySlices), and the
# program prints `x0.requires_grad` after a graph break (print): eager True,
# compiled False, on every backend (eager's too: the tracer). Not analysed: the
# input's requires_grad after the first graph's write is not what the code
# after the break sees (the graph's write is applied to x0 without its
# autograd history, or the tracer's view of x0 after the break is stale).
# The shrunk program ends in a NameError (v6) on both sides: the difference
# is the printed line before it.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 4), generator=g, dtype=torch.float32)
    x1 = torch.randn((2, 4), generator=g, dtype=torch.float32)[::2]
    x1.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    x0[0] = x1
    v4 = x0.mT
    print('p', type(x0).__name__, x0.requires_grad)
    v6.requires_grad_()
    s8 = v5.is_contiguous()
    v9 = v4.clamp(min=v4, max=v2)
    v10 = torch.full((2,), True)
    v11 = x1.max(1).values
    v12 = torch.fmod(x1, x1)
    return (v6, x1, x0)
