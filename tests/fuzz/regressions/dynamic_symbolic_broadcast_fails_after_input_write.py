# Found by the fuzzer in --dynamic mode (seed 2002758, shrunk; fixed):
# a graph captured with a symbolic size n0 at n0 == 5 holds `x0.add_(1)`
# and then `x0.view(-1) + torch.ones(7, 5)`, whose broadcast holds only
# for n0 in (1, 5). Called at n0 == 13, the graph's metas do not hold; the
# entry ran it op by op, which failed after writing the input (eager
# backend: the RuntimeError escaped the user's `except`; aot_eager and
# llvm: the frame was rerun after the write, so x0 was incremented twice).
# Now such a size is not served: its calls run the frame's bytecode before
# any op ran (runtime/compiled_graph.cpp, compiled_for_sizes).
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
