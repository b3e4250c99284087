# FIXED DEFECT (found by the fuzzer, seed 301338, shrunk): an in-place
# logical_not_ on an unsqueezed intermediate whose size-1 dim has a
# non-default stride. LibTorch 1.13's meta logical_not returns a contiguous
# tensor where eager keeps the input's layout, so AOT's recorded metas were
# wrong and the llvm backend (which allocates outputs from them) gave (8, 4, 1)
# where eager gives (2, 1, 2). Meta rules for the logical ops (meta_infer.cpp).
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
