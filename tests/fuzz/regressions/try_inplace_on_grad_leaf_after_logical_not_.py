# FIXED (found by the fuzzer in --dynamic mode, seed 2001391, shrunk; failed
# the same way without --dynamic): on a leaf input requiring grad,
# `x0.logical_not_()` (eager allows it: no autograd) then `x0.add_(1)`
# inside `try`, which eager rejects ("a leaf Variable that requires grad is
# being used in an in-place operation") and the `except` catches. The
# graph held both ops, wrote the input in logical_not_, failed in add_ and
# could not be undone, so the exception escaped the `except`. Now the
# tracer asks LibTorch's autograd (on meta) whether an in-place op on a
# tensor requiring grad is refused on a leaf, and breaks the graph before
# it when the input is such a leaf (or a view of one): eager runs it and
# raises where eager does (InstructionTranslator::inplace_allowed_on_inputs).
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
