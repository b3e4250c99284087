# FIXED (round 14; fresh-campaign seed 9905338, shrunk by the fuzzer): v4
# is a transposed constant written whole (`copy_`), then `v6 =
# v4.flatten()`: eager's flatten copies (v4 is not contiguous), so v6
# shares no memory with v4. The functional v4 is laid out as the copied
# value, where flatten views it, and AOT returned v6 as a view of v4's
# memory (two outputs sharing storage only compiled). An output that is a
# view only in the functional graph, while eager's tensor shares memory
# with no input or other output, is now a fresh output, a copy of its
# value (compile/aot/capture_outputs.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(-4, 5, (1, 1), generator=g)
    return [x0]

def fn(x0):
    v1 = torch.ones_like(x0) * 3
    v3 = torch.addmm(v1, v1, v1.t())
    v4 = torch.tensor([[1, 2], [3, 4]]).t()
    d5 = {'x': v4, 'n': -1}
    v4.copy_(v3)
    v6 = v4.flatten()
    return (d5, v6)
