# FIXED (round 15; campaign seed 9968454, shrunk by hand; llvm only): the
# gradient of x2 reads v4 = x0 / x1, and x0 is written in place after that
# (through a view, as the campaign's program did). Eager saves v4; llvm's
# min-cut partitioner recomputes the cheap division in the backward and so
# saved the input x0 itself, which the call then wrote: the backward raised
# "modified by an inplace operation" only compiled. An input the call
# writes is now saved only where the backward reads it itself
# (compile/aot/partition.cpp).
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (1, 1), generator=g).bool()
    x1 = torch.randint(0, 2, (), generator=g).bool()
    x2 = torch.randn((4, 1), generator=g, dtype=torch.float64)[::2]
    x2.requires_grad_()
    return [x0, x1, x2]


def fn(x0, x1, x2):
    v3 = x0.select(0, 0)
    v4 = x0 / x1
    x0.unsqueeze_(0)
    v3.masked_fill_(v3 > 0, 1)
    v9 = x2 * v4 + 1
    return [x2, v9]
