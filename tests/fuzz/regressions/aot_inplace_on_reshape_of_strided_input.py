# Found by the fuzzer (seed 201780, shrunk): under AOT an in-place op on
# `x.reshape(-1)` of a strided input (`base[::2]`; reshape is a view here)
# wrote garbage into the caller's tensor: functionalization replayed the
# view as `_reshape_alias(fresh value, sizes, the input's strides)`, an
# out-of-bounds read. Fixed in compile/aot/proxy.cpp: such a replay is
# recorded as `view`.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (8,), generator=g)[::2]
    return [x0]

def fn(x0):
    v1 = x0.reshape(-1)
    v1.floor_divide_(2)
