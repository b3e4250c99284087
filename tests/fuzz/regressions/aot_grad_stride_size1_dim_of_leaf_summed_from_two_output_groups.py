# FIXED in round 24 (written by hand, of the engine-sum class; failed on
# main's build before this fix, aot_eager and llvm, static and --dynamic).
# x0, a (3, 1) leaf laid out as (1, 3), returned through `relu(x0) * 3` and
# through `stack([x0, x0]).transpose(0, -1)[0] * 0.5`: its gradient is
# handed over as three contributions (round 19: relu's, the stack's two),
# which read disjoint tangents, so round 20's output groups give two
# CompiledFunctionBackwardPart nodes. Eager's engine runs relu's node
# first (the later op) and adds (1, 1) + the selects' (2, 6) + (2, 6),
# laid out (1, 3); the compiled parts were made in output order, the
# stack's part got the higher sequence number and ran first, and x0.grad
# came out (1, 1). The parts are now made in the order of the latest op
# each hands a contribution of (Plan::grad_order): compile/aot/backward_node.cpp,
# in_arrival_order.
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 3), generator=g, dtype=torch.float64).t()
    x0.requires_grad_()
    return [x0]


def fn(x0):
    v1 = torch.stack([x0, x0]).transpose(0, -1)[0]
    return (torch.relu(x0) * 3, v1 * 0.5)
