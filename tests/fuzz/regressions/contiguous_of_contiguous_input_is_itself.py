# FIXED (round 12: the tracer returns the tensor itself from these calls,
# tracer/tensor_methods.cpp). Was: widened fuzzer, round 11, seed 8000000, shrunk; the class of
# tests/regressions/30, the other direction): x2 is contiguous (here an
# empty (4, 0) one; any contiguous tensor does it), so eager's
# x2.contiguous(memory_format=torch.contiguous_format) is x2 itself and
# prints True; under every backend (the tracer) the compiled code made a
# new tensor (False). `x.contiguous()` without memory_format is right;
# `x.to(dtype=x.dtype, copy=False)` and `x.flatten()` of a 1-d x are
# wrong the same way (fuzz slice seeds 21122, 21174, 21182, 21236, 21244).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 2, (8, 2), generator=g).bool()[::2]
    x1 = torch.randn((4, 2), generator=g, dtype=torch.float32)
    x2 = torch.randint(-4, 5, (4, 0), generator=g).expand(4, 0)
    x3 = 0.5
    x1.requires_grad_()
    return [x0, x1, x2, x3]

def fn(x0, x1, x2, x3):
    v8 = x2.contiguous(memory_format=torch.contiguous_format)
    print('p', v8 is x2, v8.stride())
