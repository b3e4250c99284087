# OPEN DEFECT (found by the fuzzer, seed 201780, shrunk): under AOT an in-place op on `x.reshape(-1)` of a strided input (`base[::2]`,
# reshape is a view here) writes the input with the wrong layout: garbage values
# (read past the data) in the caller's tensor.
# The AOT graph replays the view as `_reshape_alias(mul, [4], [2])`: the
# input's strides applied to a fresh contiguous tensor of 4 elements, an
# out-of-bounds read (PyTorch 1.13's functionalization replays
# _reshape_alias with the recorded strides; later versions replay it as
# view). Expected to fail.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (8,), generator=g)[::2]
    return [x0]

def fn(x0):
    v1 = x0.reshape(-1)
    v1.floor_divide_(2)
