# OPEN (found by the fuzzer in --dynamic mode, seed 2002758, shrunk;
# dynamic-specific: passes without --dynamic and with dynamic=False at the
# same sizes): a graph captured with a symbolic size n0 at n0 == 5 holds
# `x0.add_(1)` and then `x0.view(-1) + torch.ones(7, 5)`, whose broadcast
# only holds for n0 in (1, 5) but is not guarded: called at n0 == 13 (after
# n0 == 5 under dynamic=True, after 2 and 5 under dynamic=None) the graph
# itself fails after writing the input. eager backend: the RuntimeError
# escapes the user's `except`; aot_eager and llvm: the frame is rerun
# without undoing the graph's write, so x0 is incremented twice.
# fuzz mode: --dynamic
import torch
LOG = []

def make_inputs(seed, variant=0):
    g = torch.Generator().manual_seed(seed)
    n0, = [(2,), (5,), (13,), (7,), (34,), (7,)][variant]
    x0 = torch.randn((n0,), generator=g, dtype=torch.float64)
    return [x0]

def fn(x0):
    v1 = x0.view(-1)
    try:
        x0.add_(1)
        v2 = v1 + torch.ones(7, 5)
    except (RuntimeError, IndexError, TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError) as e:
        pass
    return ()
