# FIXED (round 12, widened fuzzer, seed 9800167 of the campaign
# 9800000..9802999 on the merged build, shrunk): the resumed graph reads
# v1 (whose grad_fn is floor_divide_'s, which has no derivative) only
# through results nobody uses; its gradient is None. The compiled node
# still had an edge to v1's grad_fn, and the engine runs a node an edge
# leads to even with no gradient: the backward raised "derivative for
# aten::floor_divide_ is not implemented" under aot_eager and llvm. An input
# whose gradient the backward never defines now gets no edge (jit/aot.cpp).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((), generator=g, dtype=torch.float32)
    x1 = -2
    x0.requires_grad_()
    return [x0, x1]

def fn(x0, x1):
    v1 = x0.abs()
    v2 = v1.floor_divide_(2)
    v3 = torch.where(v1 > 0, v1, 0)
    s4 = v3.storage_offset()
    v7 = torch.where(x0 > 0, 1.5, x0)
    v8 = v3.topk(1, -1).indices
    return (v7,)
