# OPEN, expected to fail (the lead's review of round 24, by hand; on main's
# a90b1b9 x0.grad is the wrong one, on round 24's build x1.grad): aot_eager
# and llvm, a gradient's stride on a size-1 dim ((1, 1) against eager's
# (1, 3)). Round 24 makes a leaf's output-group parts in the order of the
# latest op each hands a contribution of (backward_node.cpp,
# in_arrival_order), one order for all leaves; here the two leaves' eager
# orders cross (x0's first contribution comes from the second output's
# group, x1's from the first's), so one leaf still sums in another order.
# A fix: one node for groups whose per-leaf orders conflict.
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 3), generator=g, dtype=torch.float64).t()
    x1 = torch.randn((1, 3), generator=g, dtype=torch.float64).t()
    x0.requires_grad_()
    x1.requires_grad_()
    return [x0, x1]


def fn(x0, x1):
    a = torch.stack([x1, x1]).transpose(0, -1)[0]
    b = torch.relu(x0) * 3
    c = torch.relu(x1) * 3
    d = torch.stack([x0, x0]).transpose(0, -1)[0]
    return (a * 0.5 + d * 0.25, b + c)
