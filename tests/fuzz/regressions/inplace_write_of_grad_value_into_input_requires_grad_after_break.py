# FIXED (round 18; round 17's campaign, static seed 9979195, shrunk by the
# fuzzer; 9979603 is the same; failed on every backend on main's build of
# cfb854e): x1 requires grad and `x0[0] = x1` writes it into x0, an input
# that does not: in eager x0 then requires grad (grad_fn CopySlices), as
# does every differentiable view of it. The program prints
# `x0.requires_grad` (print: a graph break; the argument is read in the
# graph before it): eager True, compiled False. The write is a `copy_` of
# a `select` of x0's placeholder, whose meta (the input as it came in)
# does not require grad, and the trace read that flag. The tracer now
# notes in-place writes of values requiring grad and answers
# requires_grad, grad_fn (a graph break) and the metas of later ops on any
# tensor of the written view family from them (tracer/grad_writes.cpp).
# The shrunk program ends in a NameError (v6) on both sides: the
# difference was the printed line before it.
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
