"""The situations of AOTAutograd's Notes, through tracejit.compile with the
suite's backend (under aot_eager/llvm they go through AOT's functional graph
and runtime wrapper): values, aliasing (storage, _base, strides, offset) and
_version must be eager's; then gradients of a training step, and
torch.autograd.gradcheck in float64 on compiled functions."""
import torch
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def describe(t):
    if not isinstance(t, torch.Tensor):
        return t
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t._version, t.requires_grad)


def same_tensor_facts(got, want, inputs_got, inputs_want, what):
    """Values, layout, version, and which input (if any) each output aliases."""
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    ok = len(got) == len(want)
    for g, w in zip(got, want):
        ok &= describe(g) == describe(w)
        ok &= torch.allclose(g, w, equal_nan=True)
        # Which input's storage (if any) the output shares, and whether it has a _base.
        def alias_of(t, ins):
            return [i for i, x in enumerate(ins) if t.storage().data_ptr() == x.storage().data_ptr()]
        ok &= alias_of(g, inputs_got) == alias_of(w, inputs_want)
        ok &= (g._base is None) == (w._base is None)
    # Outputs that alias each other in eager alias each other compiled.
    for i in range(len(want)):
        for j in range(i + 1, len(want)):
            a = want[i].storage().data_ptr() == want[j].storage().data_ptr()
            b = got[i].storage().data_ptr() == got[j].storage().data_ptr()
            ok &= a == b
    for gi, wi in zip(inputs_got, inputs_want):
        ok &= describe(gi) == describe(wi) and torch.allclose(gi, wi, equal_nan=True)
    check(ok, f"{what}: values, aliasing and versions as eager")


def compare(fn, make, what):
    want_in = make()
    got_in = [t.clone() if isinstance(t, torch.Tensor) else t for t in want_in]
    # Clones have version 0 like fresh tensors.
    want = fn(*want_in)
    compiled = tracejit.compile(fn, backend=BACKEND)
    got = compiled(*got_in)
    same_tensor_facts(got, want, got_in, want_in, what)
    # A second call (cache hit) behaves the same.
    want_in2, got_in2 = make(), None
    got_in2 = [t.clone() for t in want_in2]
    same_tensor_facts(compiled(*got_in2), fn(*want_in2), got_in2, want_in2, what + " (second call)")


def data_mutation(x, y):
    x.add_(y)
    return x * 2


def metadata_mutation(x):
    x.t_()
    return x + 1


def mutation_through_view(x):
    v = x[0]
    v.mul_(3)
    return x.sum(0)


def output_is_input(x, y):
    return x, y + 1


def output_view_of_input(x):
    return x.t(), x[1:], x.view(-1)


def view_of_intermediate(x):
    y = x * 2
    return y.t(), y[0]


def outputs_alias_each_other(x):
    y = x + 1
    return y, y.view(-1), y[0]


def duplicate_inputs(x, y):
    return x * y + x


def aliased_mutated_inputs(a, b):
    a.mul_(2)
    return a + b


compare(data_mutation, lambda: [torch.randn(3, 4), torch.randn(3, 4)], "input data mutation")
compare(metadata_mutation, lambda: [torch.randn(3, 4)], "input metadata mutation (t_)")
compare(mutation_through_view, lambda: [torch.randn(3, 4)], "mutation through a view of an input")
compare(output_is_input, lambda: [torch.randn(3), torch.randn(3)], "an output that is an input")
compare(output_view_of_input, lambda: [torch.randn(3, 4)], "outputs that view an input")
compare(view_of_intermediate, lambda: [torch.randn(3, 4)], "outputs that view an intermediate")
compare(outputs_alias_each_other, lambda: [torch.randn(3, 4)], "outputs aliasing each other")


def clone_of_strided_row(x):
    # The clone keeps the slice's stride on its size-1 dim (6, not 3).
    v = x[::2].clone()
    v.add_(1)
    return v, v[0], v.t()


# (Not `compare`: an intermediate's version counter is not eager's.)
for grad in (False, True):
    x_w = torch.randn(2, 3, dtype=torch.float64, requires_grad=grad)
    x_g = x_w.detach().clone().requires_grad_(grad)
    want, got = clone_of_strided_row(x_w), tracejit.compile(clone_of_strided_row, backend=BACKEND)(x_g)
    ok = all(g.stride() == w.stride() and torch.equal(g, w) and (g._base is None) == (w._base is None)
             and (g.grad_fn is None) == (w.grad_fn is None) for g, w in zip(got, want))
    if grad:
        (want[0] * want[2].t()).sum().backward()
        (got[0] * got[2].t()).sum().backward()
        ok &= torch.allclose(x_g.grad, x_w.grad)
    else:
        want[0].mul_(3)
        got[0].mul_(3)
        ok &= torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])
    check(ok, "the stride of a size-1 dim, on an output and its views " +
          ("(gradients)" if grad else "(writes reach the views)"))

def alias_of_mutated_strided_input(x):
    x[0] = 3
    return x[...]


base_w = torch.randn(3, 4)
base_g = base_w.clone()
want = alias_of_mutated_strided_input(base_w[:, ::2])
got = tracejit.compile(alias_of_mutated_strided_input, backend=BACKEND)(base_g[:, ::2])
check(got.stride() == want.stride() and torch.equal(got, want) and torch.equal(base_g, base_w),
      "a view returned of a mutated non-contiguous input (strides, values, the caller's base)")

v_in = torch.randn(4, 3)
v_ref = v_in.clone()
view_out = tracejit.compile(output_view_of_input, backend=BACKEND)(v_in)[0]
view_out.add_(1)
v_ref.t().add_(1)
check(torch.equal(v_in, v_ref) and v_in._version == 1, "writing through a returned view reaches the input")

x = torch.randn(5)
want = duplicate_inputs(x, x)
got = tracejit.compile(duplicate_inputs, backend=BACKEND)(x, x)
check(torch.allclose(got, want), "duplicate inputs (the same tensor twice)")

base = torch.randn(6)
base2 = base.clone()
want = aliased_mutated_inputs(base[:4], base[2:])
got = tracejit.compile(aliased_mutated_inputs, backend=BACKEND)(base2[:4], base2[2:])
check(torch.allclose(got, want) and torch.equal(base, base2) and base._version == base2._version,
      "mutated inputs that view one another")

# ------------------------------------------------------------ gradients
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.drop = torch.nn.Dropout(0.25)
        self.ln = torch.nn.LayerNorm(8 * 8 * 8)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x, target):
        h = self.bn(self.conv(x))
        h = h.relu_()                     # in-place on an intermediate
        h = self.drop(h).flatten(1)
        h = self.ln(h)
        return F.cross_entropy(self.fc(h), target)


def train(model, step, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for i in range(steps):
        torch.manual_seed(100 + i)
        x, target = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
        opt.zero_grad()
        loss = step(x, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


ref = Net()
mine = Net()
mine.load_state_dict(ref.state_dict())
want_losses = train(ref, ref)
got_losses = train(mine, tracejit.compile(mine, backend=BACKEND))
check(all(abs(a - b) < 1e-5 for a, b in zip(got_losses, want_losses)), f"training losses as eager: {got_losses} vs {want_losses}")
params_close = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(mine.parameters(), ref.parameters()))
check(params_close, "parameters after 3 training steps as eager")
check(torch.allclose(mine.bn.running_mean, ref.bn.running_mean, atol=1e-6) and
      torch.allclose(mine.bn.running_var, ref.bn.running_var, atol=1e-6) and
      mine.bn.num_batches_tracked.item() == ref.bn.num_batches_tracked.item(),
      "batch norm running statistics as eager")


def two_uses(x, w):
    y = (x @ w).tanh()
    return y, y * 2


xg = torch.randn(4, 5, requires_grad=True)
wg = torch.randn(5, 3, requires_grad=True)
xc, wc = xg.detach().clone().requires_grad_(), wg.detach().clone().requires_grad_()
a, b = two_uses(xg, wg)
(a.sum() + b.pow(2).sum()).backward(retain_graph=True)
ca, cb = tracejit.compile(two_uses, backend=BACKEND)(xc, wc)
(ca.sum() + cb.pow(2).sum()).backward(retain_graph=True)
check(torch.allclose(xg.grad, xc.grad, atol=1e-6) and torch.allclose(wg.grad, wc.grad, atol=1e-6),
      "gradients of an output used twice")
gx, = torch.autograd.grad(cb.sum(), xc)
wx, = torch.autograd.grad(b.sum(), xg)
check(torch.allclose(gx, wx, atol=1e-6), "torch.autograd.grad with retain_graph=True")


def gradcheck_fn(fn, *shapes):
    inputs = tuple(torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes)
    compiled = tracejit.compile(fn, backend=BACKEND)
    try:
        ok = torch.autograd.gradcheck(compiled, inputs, eps=1e-6, atol=1e-5)
    except Exception as e:  # noqa: BLE001
        print(f"  gradcheck raised: {type(e).__name__}: {e}")
        ok = False
    check(ok, f"gradcheck of {fn.__name__} (float64)")


gradcheck_fn(lambda a, b: (a * b).sin() + a.exp(), (3, 4), (3, 4))
gradcheck_fn(lambda a, w: F.softmax(a @ w, dim=-1).log(), (3, 4), (4, 5))
gradcheck_fn(lambda a: F.layer_norm(a, (4,)).tanh(), (3, 4))
gradcheck_fn(lambda a, b: torch.where(a > 0, a * b, b.pow(2)).sum(1), (3, 4), (3, 4))
# Dtype conversions (to(dtype), double(), _to_copy) stay inside the functional graph.
for convert in (lambda a: a.to(torch.float64) * 2, lambda a: a.double().sin() + a.to(torch.float16).float()):
    a = torch.randn(5, requires_grad=True)
    want, got = convert(a), tracejit.compile(convert, backend=BACKEND)(a)
    check(got.dtype == want.dtype and torch.allclose(got, want), f"dtype conversion: {got.dtype} as eager")
    want.sum().backward()
    grad = a.grad.clone()
    a.grad = None
    got.sum().backward()
    check(torch.allclose(a.grad, grad), "dtype conversion: gradient as eager")


def dead_code(a, b):
    unused1 = torch.rsqrt(a)  # noqa: F841 (its derivative is NaN at -1)
    unused2 = b * 3  # noqa: F841 (b reaches no output)
    return a * 2


def grads(fn, make):
    inputs = make()
    fn(*inputs).sum().backward()
    return [None if t.grad is None else (t.grad.tolist(), t.grad.stride()) for t in inputs]


def dead_code_inputs():
    return [torch.tensor([1.0, -1.0], requires_grad=True), torch.ones(2, requires_grad=True)]


check_equal(grads(tracejit.compile(dead_code, backend=BACKEND), dead_code_inputs), grads(dead_code, dead_code_inputs),
            "dead code adds nothing to the backward; an input read only by it gets no gradient")


def first_element(b):
    return b[0]


def expanded_leaf():
    return [torch.tensor([3.0]).expand(4).detach().requires_grad_(True)]


check_equal(grads(tracejit.compile(first_element, backend=BACKEND), expanded_leaf), grads(first_element, expanded_leaf),
            "a view of an expanded input: its gradient reaches only the element it viewed")


def plus_one(b):
    return b + 1


def column_leaf():
    return [torch.arange(5.0).reshape(1, 5).t().detach().requires_grad_(True)]


check_equal(grads(tracejit.compile(plus_one, backend=BACKEND), column_leaf), grads(plus_one, column_leaf),
            "a gradient passed on by add: eager's strides, the size-1 dim's included")


def contiguous_after_write(b):
    b.add_(1)
    return b.contiguous()


def after_contiguous(fn):
    b = torch.arange(12.0).reshape(4, 3)[::2]  # strides (6, 1)
    r = fn(b)
    return (r.tolist(), r is b, r.stride(), r.is_contiguous(), b.tolist(), b._version)


check_equal(after_contiguous(tracejit.compile(contiguous_after_write, backend=BACKEND)),
            after_contiguous(contiguous_after_write),
            "contiguous() of a non-contiguous input written in place is a new tensor")
compare(lambda a, c: torch.where(a != 0, c, 0.0), lambda: [torch.arange(1.0, 11.0).reshape(2, 5),
                                                        torch.arange(10.0).reshape(5, 2).t()],
        "where with a scalar other: the condition's layout")
with torch.no_grad():
    y = tracejit.compile(lambda a: a * 2, backend=BACKEND)(torch.randn(3, requires_grad=True))
check(not y.requires_grad, "under no_grad the output does not require grad")
if BACKEND != "eager":
    # Every case above went through AOT's graphs and wrapper (the aliased
    # mutated inputs through a synthetic base; the view of a mutated
    # non-contiguous input too, its geometry taken from AOT's eager meta run).
    check(tracejit.counters()["backend_fallbacks"] == 0, f"no fallback to the captured graph: {tracejit.counters()}")
finish()
