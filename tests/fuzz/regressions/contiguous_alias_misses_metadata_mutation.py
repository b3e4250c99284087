# FIXED (found by the fuzzer, seed 30728, shrunk; all backends, eager
# included, so not AOT's): `v1 = x0.contiguous()` of a contiguous input is
# x0 itself, so after `x0.squeeze_()` eager's v1 has shape (2,), and LOG
# gets (2,); compiled, LOG got (1, 2): the tracer made a new value for v1.
# contiguous()/float()/to(dtype)/type_as() that change nothing now give the
# tensor itself (torch_ops.cpp). Seeds 32837 (`v5 = x1.float()` of a
# float32 x1, then `v5.squeeze_()`: x1's shape) and 33766
# (`torch.broadcast_tensors(x0, x0)[1]` then `x0.transpose_(0, -1)`) look
# like the same defect.
import torch
LOG = []

def helper14(a, b):
    LOG.append(a.shape)

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1, 2), generator=g, dtype=torch.float32).expand(1, 2)
    return [x0]

def fn(x0):
    v1 = x0.contiguous()
    x0.squeeze_()
    v15 = helper14(v1, v1)
    return ()
