"""Issue 11: torch.autograd.Function subclasses (CustomFunc.apply). With
no input requiring grad, or under no_grad, forward is traced into the
graph (ctx methods do nothing, as eager's apply without grad); with an
input requiring grad the graph breaks with a clear reason and apply runs
in CPython, so values and gradients are eager's."""
import torch

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish


class ScaledExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = torch.exp(x) * scale
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable(x)
        return x.sin(), x.cos() + (1 if ctx.needs_input_grad[0] else 2)

    @staticmethod
    def backward(ctx, a, b):
        return None


x = torch.randn(4, 5)
expect("apply without grad: forward traced", lambda t: ScaledExp.apply(t, 2.0) + 1, (x,))
expect("apply with two outputs and ctx.needs_input_grad", lambda t: TwoOutputs.apply(t * 2), (x,))


def under_no_grad(t):
    with torch.no_grad():
        return ScaledExp.apply(t, 3.0) * 2


w = torch.randn(4, 5, requires_grad=True)
expect("apply under no_grad with an input requiring grad", under_no_grad, (w,))

# With grad: a break, eager's values and gradients. (apply then calls
# forward from CPython, whose frame is traced on its own and breaks at the
# real ctx.save_for_backward: 3 graphs, 2 breaks.)
ex = expect("apply with an input requiring grad", lambda t: ScaledExp.apply(t * 2, 0.5).sum(), (w,), graphs=3, breaks=2)
check(any("requires grad" in r.reason and "ScaledExp" in r.reason for r in ex.break_reasons),
      "the break reason names ScaledExp.apply and requires grad")


def loss(t):
    return ScaledExp.apply(t * 2, 0.5).sum()


a = w.detach().clone().requires_grad_()
b = w.detach().clone().requires_grad_()
loss(a).backward()
tracejit.reset()
tracejit.compile(loss, backend=BACKEND)(b).backward()
check(torch.allclose(a.grad, b.grad), "gradients through CustomFunc.apply equal eager's")
out = tracejit.compile(lambda t: ScaledExp.apply(t, 2.0), backend=BACKEND)(x)
check(not out.requires_grad and out.grad_fn is None, "apply without grad returns a tensor without grad_fn, as eager")
finish()
