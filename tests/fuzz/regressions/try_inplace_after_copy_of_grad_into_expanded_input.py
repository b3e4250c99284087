# FIXED (found by the fuzzer in --dynamic mode, seed 2000696, shrunk by hand;
# failed the same way without --dynamic): `x1[:] = x0` (x0 requires grad,
# x1 an expanded input) then `x1.add_(0.5)` inside `try`. Eager raises "a
# leaf Variable that requires grad is being used in an in-place operation"
# there (autograd sees the view x1, which requires grad only through the
# copy into its sibling slice, as a leaf) and the `except` catches it. The
# graph held both ops, failed in add_ after the copy and could not be
# undone, so the exception escaped. Now a differentiable in-place op on an
# input that requires grad only since the graph wrote into it breaks the
# graph: eager runs it (InstructionTranslator::inplace_allowed_on_inputs).
import torch
LOG = []

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn((4,), generator=g, dtype=torch.float64).requires_grad_()
    x1 = torch.randn((4,), generator=g, dtype=torch.float32).expand(4)
    return [x0, x1]

def fn(x0, x1):
    x1[:] = x0
    try:
        x1.add_(0.5)
    except RuntimeError:
        pass
    return ()
