# FIXED (found by the fuzzer, seed 501192, shrunk; aot_eager and llvm): a view
# of a detached alias of an input that requires grad (`x0.detach().transpose(1, -1)`),
# handed to the resume function after a graph break, came back as a view of
# the input itself (requiring grad), so `v4 += v4` raised "a view of a leaf
# Variable that requires grad is being used in an in-place operation"; eager's
# view requires no grad. AOT now regenerates such views on a detached alias.
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((8, 1, 3), generator=g, dtype=torch.float64)[::2]
    x1 = torch.randn((4, 1, 1), generator=g, dtype=torch.float32).expand(4, 1, 3)
    x0.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v1 = x0.detach()
    v4 = v1.transpose(1, -1)
    print('p', v1.dim(), len(LOG))
    v4 += v4
    return ()
