# FIXED (found by the fuzzer, seed 507703, shrunk; aot_eager and llvm): `t_()`
# of a clone of an input that requires grad, then an in-place op after a
# break: LibTorch's INTERNAL ASSERT "!grad_fn" in the joint graph, the
# defect of aot_metadata_inplace_on_grad_intermediate (runs as captured now).
import torch
LOG = []

def helper3(*args):
    pass

def helper8(a):
    pass

def helper10(a):
    pass

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((8, 3), generator=g, dtype=torch.float64)[::2]
    x0.requires_grad_()
    return [x0]

def fn(x0):
    v1 = x0.mean(-2)
    v2 = x0.clone()
    v2.t_()
    v5 = v1.mean()
    print('p', v5.long().tolist())
    v17 = v2.sigmoid_()
    return ()
