# OPEN (found by the fuzzer in --dynamic mode, seed 2001391, shrunk; fails
# the same way without --dynamic): on a leaf input requiring grad,
# `x0.logical_not_()` (eager allows it: no autograd) then `x0.add_(1)`
# inside `try`, which eager rejects ("a leaf Variable that requires grad is
# being used in an in-place operation") and the `except` catches. On every
# backend the exception escapes the `except`: the graph has written an
# input requiring grad, which the runtime cannot undo, so it does not rerun
# the frame (the limitation stated in
# regressions/try_except_graph_error_with_input_mutation.py).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((1,), generator=g, dtype=torch.float32)
    x0.requires_grad_()
    return [x0]

def fn(x0):
    x0.logical_not_()
    try:
        x0.add_(1)
    except RuntimeError:
        pass
    return ()
