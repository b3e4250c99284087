# FIXED in round 25 (the lead's review of round 24, by hand; failed on
# main's d1772ea, aot_eager and llvm: x1.grad (1, 1) against eager's
# (1, 3)). Round 24 made a leaf's output-group parts (CompiledFunctionBackwardPart
# nodes) in the order of the latest op each hands a contribution of, one
# order for all leaves; here the two leaves' eager orders cross (x0's first
# contribution comes from the first output's group, the stack being later
# than relu, x1's from the second's), so one leaf summed in another order.
# Groups whose per-leaf orders conflict are now one part, whose edges hand
# each leaf its contributions in eager's arrival order (one node's edges, as
# round 19's engine sums); the parts left are made in an order every leaf's
# contributions agree with (compile/aot/backward_node.cpp, in_arrival_order).
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
