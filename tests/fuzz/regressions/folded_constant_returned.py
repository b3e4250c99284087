# Found by the fuzzer (seed 20147): under aot_eager/llvm a tensor built
# from constants only (torch.eye) and returned from a graph was constant-
# folded into one tensor shared by every call; the code after the graph
# break negated it in place, so the second call returned the identity
# again (negated twice) and all calls' results aliased each other.
# Fixed in graph/passes/constant_fold.cpp: returned values (and the bases
# of returned views) are not folded.
import torch
LOG = []


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2, (1,), generator=g).bool()]


def fn(x0):
    v3 = torch.eye(2)
    v4 = torch.ones(4).view(2, 2)
    s6 = float(v3.sum())
    v3.neg_()
    v4.mul_(3)
    return (v3, v4, s6)
