"""A backward that reaches a compiled graph through only some of its outputs
(the rest unused by the loss, or values a graph break carries on that the
resumed code never differentiates) gives what eager gives: eager's engine
never runs the formulas only the unused outputs reach, so an input they
alone read gets None (not zeros), an infinite derivative there (a sqrt of
a negative number) does not turn into NaN, a tensor saved only for them may
be modified in place afterwards, and an input of an earlier call's graph
that nothing differentiable reads is not backpropagated into (its node may
be freed). Also: `v = b.contiguous()` of a non-contiguous b written in
place is a copy, which a later `b.t_()` does not reach. Each case runs
eagerly and compiled on equal inputs and compares values, `.grad` (None or
not, values) and what backward raised (found by the fuzzer, round 12:
docs/reliability.md)."""
import torch

import tracejit
from e2e_util import BACKEND, check, finish

LOG = []


def logged_sum(x):  # LOG keeps a result of the graph: the next call's graph reads it
    LOG.append(x.sum())
    return (x * x,)


def carried_unused(x0, x1):  # x1.sum() is carried over the break, then unused
    v5 = x1.sum(dim=0)
    v4 = x0 * 2
    if v4.sum() > -1e9:  # graph break
        return (v4 + 1,)
    return (v5,)


def carried_nan(x0):  # sqrt of a negative number carried over the break, unused
    v1 = torch.sqrt(x0)
    v2 = x0.clamp(max=0.5)
    if v2.sum() > -1e9:
        return (v2 * 3,)
    return (v1,)


def saved_then_restrided(x0, x1):  # hypot saves its result; t_() bumps its version
    v1 = torch.fmod(x0, x1)
    v4 = torch.hypot(v1, v1)
    v5 = v1.abs()
    print("break", x1.long().tolist())
    v4.t_()
    return (v5,)


def saved_then_needed(x0):  # the modified saved tensor is needed: eager raises
    v4 = torch.exp(x0)
    print("break", x0.shape)
    v4.add_(1)
    return (v4,)


def unused_floor_divide(x0):
    v1 = x0.abs()
    print("break", v1.requires_grad)
    v1 *= 2
    v1.floor_divide_(2)
    return (torch.where(x0 > 0, 1.5, x0),)


def contiguous_then_t_(x1):
    x1.mul_(2)
    v9 = x1.contiguous()
    x1.t_()
    return (v9, x1)


def outcome(fn, inputs):
    pass
    res = {}
    try:
        out = fn(*inputs)
    except Exception as e:  # noqa: BLE001
        return {"raised": type(e).__name__}
    res["out"] = [o.detach().clone() for o in out]
    try:
        torch.autograd.backward([o.sum() for o in out if o.requires_grad])
        res["grads"] = [None if x.grad is None else x.grad.clone() for x in inputs]
    except RuntimeError as e:
        res["backward"] = "raised " + str(e).split(":")[0][:60]
    return res


def same(a, b):
    if a.keys() != b.keys():
        return False
    for k in a:
        if k in ("out", "grads"):
            if len(a[k]) != len(b[k]):
                return False
            for x, y in zip(a[k], b[k]):
                if (x is None) != (y is None):
                    return False
                if x is not None and not (x.shape == y.shape and torch.allclose(x, y, equal_nan=True)):
                    return False
        elif a[k] != b[k]:
            return False
    return True


def case(fn, make, what, calls=3):
    compiled = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for i in range(calls):
        torch.manual_seed(i)
        want = outcome(fn, make())
        torch.manual_seed(i)
        got = outcome(compiled, make())
        if not same(want, got):
            print(f"  call {i}: eager {want}\n          compiled {got}")
            ok = False
    check(ok, what)


leaf = lambda *shape: torch.randn(shape, dtype=torch.float64).requires_grad_()
case(logged_sum, lambda: [leaf(3)], "a graph reading an earlier call's LOG value: later backwards work")
case(carried_unused, lambda: [leaf(2, 3), leaf(4)], "an input only a carried, unused value reads gets None")
case(carried_nan, lambda: [torch.tensor([-1.0, 0.25, 4.0], dtype=torch.float64).requires_grad_()],
     "a carried, unused sqrt of a negative number does not make the gradient NaN")
case(saved_then_restrided,
     lambda: [torch.randn(1, 1, dtype=torch.float64).expand(2, 2).requires_grad_(), leaf(4, 2)[::2]],
     "a tensor saved only for an unused output may be restrided in place afterwards")
case(saved_then_needed, lambda: [leaf(3)], "a saved tensor modified in place and needed: backward raises as eager")
case(unused_floor_divide, lambda: [leaf()], "an unused floor_divide_ (no derivative) is not backpropagated into")
case(contiguous_then_t_, lambda: [torch.randn(4, 2)[::2]], "contiguous() of a written input, then t_(): a copy")


def crossed_groups(x0, x1):  # two output groups whose leaves' orders of contributions cross (round 25)
    a = torch.stack([x1, x1]).transpose(0, -1)[0]  # x1's stack before its relu, x0's after
    b = torch.relu(x0) * 3
    c = torch.relu(x1) * 3
    d = torch.stack([x0, x0]).transpose(0, -1)[0]
    return (a * 0.5 + d * 0.25, b + c)


def apart_groups(x0, x1):  # two output groups, no leaf in both
    return (x0 * 2, x1.relu())


tleaf = lambda: torch.randn(1, 3, dtype=torch.float64).t().requires_grad_()  # a (3, 1) leaf laid out as (1, 3)
case(crossed_groups, lambda: [tleaf(), tleaf()], "two crossed output groups: gradients as eager's")
if BACKEND in ("aot_eager", "llvm"):
    # Their one merged backward part runs whole for a backward from any of
    # its outputs: counted per call (round 26), so the cost shows.
    for fn, want in ((crossed_groups, 1), (apart_groups, 0)):
        compiled = tracejit.compile(fn, backend=BACKEND)
        before = tracejit.counters()["aot_merged_backward_parts"]
        out = compiled(tleaf(), tleaf())
        out[0].sum().backward()
        got = tracejit.counters()["aot_merged_backward_parts"] - before
        check(got == want, f"{fn.__name__}: {want} merged backward part(s) counted per call, got {got}")
else:
    check("aot_merged_backward_parts" in tracejit.counters(), "tracejit.counters() has aot_merged_backward_parts")
finish()
