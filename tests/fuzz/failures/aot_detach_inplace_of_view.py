# OPEN DEFECT (found by the fuzzer, seeds 115, 100086): under AOT
# `x.detach().detach_()` raises "Can't detach views in-place" where eager
# does not. Expected to fail.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((3,), generator=g)]


def fn(x0):
    v1 = x0.detach()
    v2 = v1.detach_()
    return (v2 * 2,)
