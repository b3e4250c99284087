# FIXED in round 25 (written by hand, a variant of
# aot_grad_stride_size1_dim_of_output_and_its_view_summed_in_backward_graph:
# the view `v2.t().expand(2, 3)` of an output `x0 + x1`, read by tanh;
# failed on main's d1772ea, aot_eager and llvm: x1.grad (1, 1) against
# eager's (1, 3)).
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
    v2 = x0 + x1
    v3 = v2.t().expand(2, 3)
    v5 = v3.tanh() * 2
    return (v5, v2, v3)
