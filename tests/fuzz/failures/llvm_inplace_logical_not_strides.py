# OPEN DEFECT (found by the fuzzer, seed 301338, llvm only, shrunk): an in-place
# logical_not_ on an unsqueezed intermediate whose size-1 dim has a non-default
# stride: AOT's functional graph replaces it by logical_not + _to_copy whose
# recorded metas say contiguous, and the llvm backend allocates its outputs
# with those strides ((8, 4, 1) where eager keeps (2, 1, 2)); aot_eager runs
# ATen and gets eager's strides. Expected to fail.
import torch
LOG = []

def helper40(a):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4, 2), generator=g, dtype=torch.float32).transpose(-1, -2)
    x1 = -2
    return [x0, x1]

def fn(x0, x1):
    v14 = torch.exp(x0)
    v15 = v14.unsqueeze_(0)
    v16 = x0 < x0
    v14.logical_not_()
    print('p', v16.dim(), len(LOG))
    v19 = v14.permute(*reversed(range(v14.dim())))
    v25 = v19 + v16
    return (v25,)
