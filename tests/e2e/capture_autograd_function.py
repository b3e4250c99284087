"""Issue 11: torch.autograd.Function subclasses (CustomFunc.apply). Without
grad (no input requires grad, or under no_grad), forward is traced into the
graph and ctx methods record nothing that matters. With grad, forward is
traced inline, backward is traced into a body graph, and one
autograd_function node attaches them: one graph, no break, and the
gradients are the custom backward's (eager's), on every backend. What
cannot be modelled (mark_dirty, set_materialize_grads(False), a backward
with side effects or a data-dependent branch, ...) breaks the graph with a
reason, and apply runs in CPython with eager's semantics."""
import copy

import torch
from torch.autograd.function import once_differentiable

import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish

EXACT = BACKEND in ("eager", "aot_eager")


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if EXACT:
        return torch.equal(a, b)
    return torch.allclose(a, b, atol=1e-5, rtol=1e-5)


def flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return []


def loss_of(out):
    """A scalar from every output that requires grad (weighted, so each output's grad differs)."""
    total = 0
    for i, t in enumerate(flat(out)):
        if t.requires_grad:
            total = total + (t * (i + 1)).sum()
    return total


def expect_grads(name, fn, make_args, graphs=1, breaks=0, params=lambda: [], reason=None):
    """Runs fn eagerly and compiled on fresh leaves, backpropagates a scalar of
    its outputs, and compares values, every .grad and explain's counts."""
    tracejit.reset()
    for p in params():
        p.grad = None
    args = make_args()
    want = fn(*args)
    loss_of(want).backward()
    want_grads = [a.grad for a in args if isinstance(a, torch.Tensor)] + [p.grad for p in params()]
    for p in params():
        p.grad = None
    args2 = make_args()
    got = tracejit.compile(fn, backend=BACKEND)(*args2)
    loss_of(got).backward()
    got_grads = [a.grad for a in args2 if isinstance(a, torch.Tensor)] + [p.grad for p in params()]
    check(len(flat(got)) == len(flat(want)) and all(same(g, w) for g, w in zip(flat(got), flat(want))),
          f"{name}: outputs equal eager's")
    check(all(g.requires_grad == w.requires_grad for g, w in zip(flat(got), flat(want))),
          f"{name}: requires_grad of outputs as eager")
    check(len(got_grads) == len(want_grads) and all(same(g, w) for g, w in zip(got_grads, want_grads)),
          f"{name}: gradients equal eager's")
    for p in params():
        p.grad = None
    ex = tracejit.explain(fn)(*make_args())
    reasons = "; ".join(r.reason[:200] for r in ex.break_reasons[:3])
    if reason is None:
        check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks),
                    f"{name}: graphs/breaks" + (f" ({reasons})" if reasons else ""))
    else:
        # One break: forward and backward called by eager's apply (real ctx)
        # are left to CPython, not traced as frames of their own.
        check(ex.graph_break_count == 1 and any(reason in r.reason for r in ex.break_reasons),
              f"{name}: breaks once, with a reason naming {reason!r} ({reasons})")
    return got, got_grads


def leaf(*shape, seed=0, requires_grad=True):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).requires_grad_(requires_grad)


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


# ---- without grad: forward traced, as before
x = torch.randn(4, 5)
expect("apply without grad: forward traced", lambda t: ScaledExp.apply(t, 2.0) + 1, (x,))
expect("apply with two outputs and ctx.needs_input_grad", lambda t: TwoOutputs.apply(t * 2), (x,))


def under_no_grad(t):
    with torch.no_grad():
        return ScaledExp.apply(t, 3.0) * 2


w = torch.randn(4, 5, requires_grad=True)
expect("apply under no_grad with an input requiring grad", under_no_grad, (w,))
out = tracejit.compile(lambda t: ScaledExp.apply(t, 2.0), backend=BACKEND)(x)
check(not out.requires_grad and out.grad_fn is None, "apply without grad returns a tensor without grad_fn, as eager")

# ---- with grad: one graph, the custom backward
ex = expect("apply with an input requiring grad", lambda t: ScaledExp.apply(t * 2, 0.5).sum(), (w,))
check(ex.break_reasons == [], "no break reasons")
expect_grads("ScaledExp (saves its output, a number on ctx)", lambda t: ScaledExp.apply(t * 2, 0.5),
             lambda: [leaf(4, 5)])
got, _ = expect_grads("ScaledExp output", lambda t: ScaledExp.apply(t, 0.5), lambda: [leaf(3)])
# eager: the node the graph attached; AOT backends wrap the whole graph in one node.
want_name = "ScaledExpBackward" if BACKEND == "eager" else "CompiledFunctionBackward"
check(got.grad_fn is not None and got.grad_fn.name() == want_name,
      f"the output's grad_fn is {want_name} ({got.grad_fn.name()})")


class StraightThroughRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, grad):
        return grad


def st_round(t):
    return StraightThroughRound.apply(t * 3) * t


_, grads = expect_grads("straight-through round: the custom backward runs", st_round, lambda: [leaf(6, seed=1)])
t = leaf(6, seed=1).detach()
check(torch.allclose(grads[0], 3 * t + (3 * t).round()),
      "straight-through grad is 3t + round(3t) (autograd's own round formula would give round(3t))")


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.alpha * grad, None


class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class ReversalNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.a = torch.nn.Linear(5, 4)
        self.b = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.b(Identity.apply(GradReverse.apply(torch.relu(self.a(x)), 0.7)))


net = ReversalNet()
expect_grads("gradient reversal (a view of the input) and an input returned as is, in an nn.Module",
             lambda x: net(x), lambda: [leaf(3, 5, seed=2, requires_grad=False)], params=lambda: list(net.parameters()))


class MulConst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        ctx.flags = ctx.needs_input_grad
        return a * b * k

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = grad * b * ctx.k if ctx.needs_input_grad[0] else None
        gb = grad * a * ctx.k if ctx.needs_input_grad[1] else None
        return ga, gb, None


expect_grads("two tensors (one without grad) and a number; needs_input_grad",
             lambda a, b: MulConst.apply(a, b, 1.5), lambda: [leaf(3, 4, seed=4), leaf(3, 4, seed=5, requires_grad=False)])


class MaxWithIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, index = x.max(dim=1)
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return values, index

    @staticmethod
    def backward(ctx, grad_values, grad_index):
        (index,) = ctx.saved_tensors
        out = torch.zeros(ctx.shape)
        return out.scatter(1, index.unsqueeze(1), grad_values.unsqueeze(1))


got, _ = expect_grads("two outputs, an int64 one marked non-differentiable",
                      lambda x: MaxWithIndex.apply(x * 2), lambda: [leaf(3, 5, seed=6)])
check(got[0].requires_grad and not got[1].requires_grad and got[1].dtype == torch.int64,
      "the non-differentiable int64 output does not require grad, as eager")


class TanhScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        h = x.tanh()
        ctx.save_for_backward(x, h)  # an input and an intermediate that is not returned
        ctx.w = w  # a tensor kept as a ctx attribute
        return (h * w).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        x, h = ctx.saved_tensors
        gy = grad.unsqueeze(1)
        gh = gy * ctx.w
        return gh * (1 - h * h), (gy * h).sum(0)


expect_grads("saved input and intermediate, a tensor ctx attribute", lambda x, w: TanhScale.apply(x, w),
             lambda: [leaf(3, 4, seed=7), leaf(4, seed=8)])

LIMIT = torch.tensor(0.5)


class MaskedClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.where(x.abs() <= LIMIT, grad, torch.zeros_like(grad))


expect_grads("backward reads a global tensor (where/clamp mask)", lambda x: MaskedClamp.apply(x * 2),
             lambda: [leaf(10, seed=9)])


def several(x):
    y = ScaledExp.apply(x, 0.5) + StraightThroughRound.apply(x * 2)
    for i in range(3):
        y = ScaledExp.apply(y * 0.1, 1.0 + i)
    return y


expect_grads("two applies and a loop of three", several, lambda: [leaf(5, seed=10)])


class OnceDiff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x  # not autograd's 2x: the custom backward runs


expect_grads("@once_differentiable backward", lambda x: OnceDiff.apply(x), lambda: [leaf(4, seed=11)])


class WithNumber(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, 3

    @staticmethod
    def backward(ctx, grad, none):
        return grad * 2 + (0 if none is None else 1)


got, _ = expect_grads("a non-tensor output: backward gets None for it", lambda x: WithNumber.apply(x),
                      lambda: [leaf(4, seed=12)])
check(isinstance(got, tuple) and got[1] == 3, "the number comes back as eager returns it")


# retain_graph: two grads of one output, then grads accumulating over two calls
def retained(x):
    return ScaledExp.apply(x, 0.5).sum()


tracejit.reset()
compiled = tracejit.compile(retained, backend=BACKEND)
a, b = leaf(4, seed=13), leaf(4, seed=13)
ea, ca = retained(a), compiled(b)
g1 = torch.autograd.grad(ea, a, retain_graph=True)[0], torch.autograd.grad(ca, b, retain_graph=True)[0]
g2 = torch.autograd.grad(ea, a)[0], torch.autograd.grad(ca, b)[0]
check(same(g1[0], g1[1]) and same(g2[0], g2[1]), "retain_graph: two autograd.grad calls give eager's grads")
retained(a).backward()
retained(a).backward()
compiled(b).backward()
compiled(b).backward()
check(same(a.grad, b.grad), "grads accumulate over two compiled calls as eager")


# a training step of a small model using the Functions
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(14)
        self.l1 = torch.nn.Linear(6, 8)
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x, y):
        h = TanhScale.apply(self.l1(x).unsqueeze(1).expand(-1, 2, -1).reshape(-1, 8), torch.ones(8))
        h = StraightThroughRound.apply(ScaledExp.apply(self.l1(x), 0.3)) + h.reshape(-1, 2).sum(1, keepdim=True)
        out = self.l2(GradReverse.apply(h, 0.5))
        return torch.nn.functional.cross_entropy(out, y)


def train(model, steps, compiled):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step_loss = tracejit.compile(model, backend=BACKEND) if compiled else model
    losses = []
    g = torch.Generator().manual_seed(15)
    for _ in range(steps):
        x, y = torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g)
        opt.zero_grad()
        loss = step_loss(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses


tracejit.reset()
m = Model()
m2 = copy.deepcopy(m)
eager_losses = train(m, 3, False)
compiled_losses = train(m2, 3, True)
check(all(same(a, b) for a, b in zip(eager_losses, compiled_losses)), "training step: losses equal eager's")
check(all(same(p, q) for p, q in zip(m.parameters(), m2.parameters())), "training step: parameters after 3 steps equal eager's")
ex = tracejit.explain(m2)(torch.randn(5, 6), torch.randint(0, 3, (5,)))
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "training step: one graph, no break")


# dynamic shapes: the body runs on the sizes of each call; a backward that
# reads a dynamic size from forward (ctx.shape) breaks with a reason.
def dyn(x):
    return ScaledExp.apply(x * 2, 0.5).sum() + StraightThroughRound.apply(x).sum()


def dyn_shape(x):
    return MaxWithIndex.apply(x)[0].sum()


for fn, graphs, breaks in ((dyn, 1, 0), (dyn_shape, 1, 1)):
    tracejit.reset()
    compiled = tracejit.compile(fn, backend=BACKEND, dynamic=True)
    for n in (3, 5, 7):
        a, b = leaf(n, 4, seed=n), leaf(n, 4, seed=n)
        fn(a).backward()
        compiled(b).backward()
        check(same(a.grad, b.grad), f"dynamic=True, {fn.__name__}, {n} rows: grads equal eager's")
    c = tracejit.counters()
    check_equal((c["graphs_compiled"], c["graph_breaks"], c["recompiles"]), (graphs, breaks, 0),
                f"dynamic=True, {fn.__name__}: one trace for every size")
ex = tracejit.explain(dyn_shape)(leaf(3, 4))
check(ex.graph_break_count == 0, "static shapes: ctx.shape is a constant, no break")

# ---- what breaks the graph, with a reason; values and grads stay eager's
class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


expect_grads("mark_dirty", lambda x: Dirty.apply(x * 1), lambda: [leaf(3, seed=16)], reason="mark_dirty")


class NoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return (g1 if g1 is not None else 0) + (g2 * 0 if g2 is not None else 0)


expect_grads("set_materialize_grads(False)", lambda x: NoMaterialize.apply(x)[0], lambda: [leaf(3, seed=17)],
             reason="set_materialize_grads")

SEEN = []


class Logs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        SEEN.append(1)
        return grad * 2


expect_grads("backward with a side effect", lambda x: Logs.apply(x), lambda: [leaf(3, seed=18)], reason="backward of")


class Branchy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        if grad.sum() > 0:
            return grad * 2
        return grad


expect_grads("backward with a data-dependent branch", lambda x: Branchy.apply(x), lambda: [leaf(3, seed=19)],
             reason="backward of")


class ReturnsList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return [x * 2]

    @staticmethod
    def backward(ctx, grad):
        return grad


tracejit.reset()
want = ReturnsList.apply(leaf(3))
got = tracejit.compile(lambda x: ReturnsList.apply(x), backend=BACKEND)(leaf(3))
check(type(got) is list and same(got[0], want[0]) and got[0].requires_grad == want[0].requires_grad,
      "forward returning a list: eager's result (no grad)")
ex = tracejit.explain(lambda x: ReturnsList.apply(x))(leaf(3))
check(any("list" in r.reason for r in ex.break_reasons), "forward returning a list breaks with a reason")


class TooMany(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def too_many(x):
    return TooMany.apply(x).sum()


try:
    too_many(leaf(3)).backward()
    eager_error = None
except RuntimeError as e:
    eager_error = str(e)
try:
    tracejit.compile(too_many, backend=BACKEND)(leaf(3)).backward()
    compiled_error = None
except RuntimeError as e:
    compiled_error = str(e)
check(eager_error is not None and compiled_error == eager_error,
      f"a backward returning too many grads raises eager's error ({compiled_error})")


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        return y, y

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + 10 * g2


expect_grads("forward returning one tensor twice", lambda x: Twice.apply(x)[0], lambda: [leaf(3, seed=20)],
             reason="twice")


# ---- a Python callable backend: GraphModule.code defines the Function
seen = []


def backend(gm, example_inputs):
    seen.append(gm)
    return lambda *inputs: gm(*inputs)


def scaled(x):
    return ScaledExp.apply(x * 2, 0.5) * StraightThroughRound.apply(x)


tracejit.reset()
a, b = leaf(4, seed=22), leaf(4, seed=22)
loss_of(scaled(a)).backward()
loss_of(tracejit.compile(scaled, backend=backend)(b)).backward()
check(same(a.grad, b.grad), "Python backend calling the GraphModule: grads equal eager's")
code = seen[0].code if seen else ""
check("(torch.autograd.Function)" in code and ".apply(" in code, "GraphModule.code defines a torch.autograd.Function")
namespace = {}
exec(compile(code, "<graph code>", "exec"), namespace)
c = leaf(4, seed=22)
outs = namespace["forward"](None, c)
loss_of(outs).backward()
check(same(c.grad, a.grad), "the generated Python code runs under plain torch with eager's grads")
readable = seen[0].print_readable(print_output=False) if seen else ""
check(0 <= readable.find("(torch.autograd.Function)") < readable.find("class GraphModule"),
      "print_readable keeps the Function class above the module")


# ---- guards: a new backward recompiles
class Swappable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def swappable(x):
    return Swappable.apply(x).sum()


tracejit.reset()
compiled = tracejit.compile(swappable, backend=BACKEND)
b = leaf(3, seed=21)
compiled(b).backward()
check(same(b.grad, torch.full((3,), 2.0)), "before the swap: grad 2")
Swappable.backward = staticmethod(lambda ctx, grad: grad * 5)
b = leaf(3, seed=21)
compiled(b).backward()
check(same(b.grad, torch.full((3,), 5.0)), "a new backward after compiling: grads follow it (recompiled)")

finish()
