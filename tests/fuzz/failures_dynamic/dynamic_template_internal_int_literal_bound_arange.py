# OPEN, expected to fail (the lead's review of round 24, by hand; fails on
# main's a90b1b9 too): aot_eager and llvm, a WRONG VALUE. `y[:, :5]`'s
# width min(n1, 5) is read as a number and feeds `arange`; every point had
# n1 > 5, so the template fits 5, and the output (a 0-d sum) does not show
# the misfit to round 24's check (its class: failures_dynamic/
# dynamic_template_internal_int_affine_fit_slice_sum.py). At n1 = 4 the sum
# has arange(5)'s 10 where eager has arange(4)'s 6.
# fuzz mode: --dynamic
import torch
LOG = []


def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n1 = [9, 7, 11, 4, 13, 10][variant]
    x0 = torch.randn((3, n1), generator=g, dtype=torch.float32)
    return [x0]


def fn(x0):
    y = x0 * 2
    k = y[:, :5].shape[1]
    return (torch.arange(k).float().sum() + y.sum(), )
