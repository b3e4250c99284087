# OPEN, expected to fail (round 19's campaign, static seed 9988067, shrunk by
# the fuzzer; aot_eager and llvm): `v4 = x0.std(); v5 = x0.std();
# v5.squeeze_()` then a graph break, and a backward through `v4 / 2`.
# Eager's backward runs; compiled it raises "one of the variables needed
# for gradient computation has been modified by an inplace operation:
# [torch.DoubleTensor []], which is output 0 of StdBackward0, is at version
# 1; expected version 0". std's formula saves its result; squeeze_ of a 0-d
# tensor changes nothing but bumps v5's version. Not analysed (the
# deadline); likely v4 and v5 came out of the graph as one tensor or one
# saved value (two equal `std` calls merged), so v5's version bump reaches
# what v4's formula saved. Without the break the program passes.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 2, 1), generator=g, dtype=torch.float64)
    x0.requires_grad_()
    return [x0]

def fn(x0):
    v4 = x0.std()
    v5 = x0.std()
    v5.squeeze_()
    if x0.max().item() > 1.5:
        pass
    else:
        pass
    v10 = v4 / 2
    LOG.append(v5.sum())
    return {'v10': v10}
