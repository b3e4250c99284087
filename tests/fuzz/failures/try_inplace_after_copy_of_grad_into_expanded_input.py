# OPEN (found by the fuzzer in --dynamic mode, seed 2000696, shrunk by hand;
# fails the same way without --dynamic): `x1[:] = x0` (x0 requires grad, x1
# an expanded input) then `x1.add_(0.5)` inside `try`: eager raises nothing;
# on every backend the compiled call raises "a leaf Variable that requires
# grad is being used in an in-place operation", and that exception escapes
# the user's `except RuntimeError` (without the `try` all backends pass).
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
