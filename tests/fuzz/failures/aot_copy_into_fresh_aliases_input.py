# OPEN DEFECT (found by the fuzzer, seed 98): under AOT a fresh tensor
# completely overwritten from an input (`v[...] = x`, same dtype and
# shape) is returned as the input itself: the output aliases the input,
# so writing into the result changes the caller's tensor. Expected to fail.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2, (2, 3), generator=g).bool(), torch.randint(0, 2, (2, 3), generator=g).bool()]


def fn(x0, x1):
    v1 = x1 >= x0
    v1[...] = x0
    return (v1,)
