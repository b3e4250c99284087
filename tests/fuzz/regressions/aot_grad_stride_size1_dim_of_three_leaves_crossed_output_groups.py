# FIXED in round 25 (written by hand, a variant of
# aot_grad_stride_size1_dim_of_two_leaves_crossed_output_groups; failed on
# main's d1772ea, aot_eager and llvm: x0.grad (1, 1) against eager's (1, 3)).
# Three (3, 1) leaves laid out as (1, 3), three outputs, each reading one
# leaf through stack/transpose/select and another through relu, all relus
# first: x0's contributions come first from output 0's group, then output
# 2's; x1's from 1's then 0's; x2's from 2's then 1's: a cycle of three,
# so the three groups are one backward part (round 25's merge, transitive).
import torch

LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn((1, 3), generator=g, dtype=torch.float64).t() for _ in range(3)]
    for x in xs:
        x.requires_grad_()
    return xs


def fn(x0, x1, x2):
    b = torch.relu(x1) * 3
    d = torch.relu(x2) * 3
    f = torch.relu(x0) * 3
    a = torch.stack([x0, x0]).transpose(0, -1)[0]
    c = torch.stack([x1, x1]).transpose(0, -1)[0]
    e = torch.stack([x2, x2]).transpose(0, -1)[0]
    return (a * 0.5 + b, c * 0.5 + d, e * 0.5 + f)
