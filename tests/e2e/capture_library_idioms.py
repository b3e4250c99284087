"""Issue 42: library idioms of real model code, compiled vs eager on every
backend (values, gradients, graph and break counts): torch.utils._pytree
(tree_flatten / tree_unflatten / tree_map inlined), `del o.k` and
`delattr(o, k)` on objects made in the frame and passed in (the deletion
replayed on the real object after the graph), and `copy.deepcopy` of
tensors, constants and containers at trace time. What cannot keep eager's
semantics in a graph breaks once with its reason and still gives eager's
results: deepcopy of an nn.Module, deleting what eager would refuse to
delete, reading an attribute after deleting it, and torch.autograd.grad or
Tensor.backward through a tensor made to require grad in the frame."""
import collections
import copy

import torch
import torch.nn as nn
import torch.utils._pytree as pytree

import tracejit
from capture_util import expect, same
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 5)


def expect_grad(name, fn, make_args, graphs=1, breaks=0):
    """`fn` on fresh inputs that require grad, eagerly and compiled: equal
    results and equal gradients of their sum, then the counts explain shows."""
    tracejit.reset()
    torch.manual_seed(2)
    ref_args = make_args()
    torch.manual_seed(2)
    res_args = make_args()
    want = fn(*ref_args)
    got = tracejit.compile(fn, backend=BACKEND)(*res_args)
    check(same(got, want), f"{name}: matches eager")
    flat = lambda out: [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    sum(t.sum() for t in flat(want)).backward()
    sum(t.sum() for t in flat(got)).backward()
    check(all(a.grad is not None and torch.allclose(a.grad, b.grad, atol=1e-5)
              for a, b in zip(ref_args, res_args) if isinstance(a, torch.Tensor) and a.requires_grad),
          f"{name}: gradients match eager")
    ex = tracejit.explain(fn)(*make_args())
    reasons = "; ".join(r.reason[:160] for r in ex.break_reasons[:3])
    check_equal((ex.graph_count, ex.graph_break_count), (graphs, breaks),
                f"{name}: graphs/breaks" + (f" ({reasons})" if reasons else ""))
    return ex


def leaf():
    return (torch.randn(4, 5, requires_grad=True),)


# torch.utils._pytree, inlined
def flatten_unflatten(t):
    tree = {"a": t, "b": [t + 1, (t * 2, 3)], "c": None}
    leaves, spec = pytree.tree_flatten(tree)
    leaves = [v.sin() if isinstance(v, torch.Tensor) else v for v in leaves]
    out = pytree.tree_unflatten(leaves, spec)
    return out["a"] + out["b"][1][0] * out["b"][1][1], len(leaves), out["c"]


def mapped(t):
    tree = {"a": t, "b": (t + 1, [t * 2])}
    out = pytree.tree_map(lambda v: v.cos(), tree)
    return out["a"] + out["b"][0] + out["b"][1][0]


Pair = collections.namedtuple("Pair", "first second")


def mapped_namedtuple(t):
    out = pytree.tree_map(lambda v: v * 3, Pair(t, collections.OrderedDict(k=t.exp())))
    return type(out).__name__, out.first - out.second["k"]


def spec_leaves(t):
    _, spec = pytree.tree_flatten([t, [t, t], {"k": t}])
    return t * spec.num_leaves


expect_grad("tree_flatten + tree_unflatten", flatten_unflatten, leaf)
expect_grad("tree_map over a dict of tuples and lists", mapped, leaf)
expect_grad("tree_map over a namedtuple and an OrderedDict", mapped_namedtuple, leaf)
expect_grad("a TreeSpec's num_leaves", spec_leaves, leaf)
tracejit.reset()
leaves, spec = tracejit.compile(lambda t: pytree.tree_flatten({"a": t, "b": (t + 1, 2)}), backend=BACKEND)(x)
rebuilt = pytree.tree_unflatten(leaves, spec)
check(type(spec) is pytree.TreeSpec and spec == pytree.tree_flatten({"a": x, "b": (x, 2)})[1]
      and torch.equal(rebuilt["b"][0], x + 1) and rebuilt["b"][1] == 2,
      "a TreeSpec made in the graph is rebuilt after it, equal to eager's")


# delattr / del o.k
class Holder:
    pass


def made_and_deleted(t):
    o = Holder()
    o.k = t + 1
    o.j = 2
    delattr(o, "j")
    del o.k
    o.k = t * 2
    return o.k, hasattr(o, "j"), hasattr(o, "k")


def returned_after_delete(t):
    o = Holder()
    o.a, o.b = t.sin(), t.cos()
    del o.a
    return o


expect_grad("delattr and del on an object made in the frame", made_and_deleted, leaf)
tracejit.reset()
got = tracejit.compile(returned_after_delete, backend=BACKEND)(x)
check(type(got) is Holder and not hasattr(got, "a") and torch.allclose(got.b, x.cos()),
      "an object made in the frame is rebuilt without the deleted attribute")


def delete_input_attr(t, o):
    o.scratch = t * 2  # set and deleted: nothing left on o
    y = o.scratch + 1
    del o.scratch
    delattr(o, "old")  # present before the call: deleted after the graph
    o.new = y
    return y.sum()


def make_holder():
    o = Holder()
    o.old = 1
    return o


tracejit.reset()
ref_o, res_o = make_holder(), make_holder()
want = delete_input_attr(x, ref_o)
compiled = tracejit.compile(delete_input_attr, backend=BACKEND)
got = compiled(x, res_o)
check(same(got, want) and vars(res_o).keys() == vars(ref_o).keys() and torch.allclose(res_o.new, ref_o.new),
      "delattr on an input object: eager's attributes after the call")
again = make_holder()
check(same(compiled(x, again), want) and vars(again).keys() == {"new"}, "delattr on an input object: second call")
ex = tracejit.explain(delete_input_attr)(x, make_holder())
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "delattr on an input object: one graph")


def delete_absent(t, o):
    y = t + 1
    try:
        del o.missing
    except AttributeError:
        return y * 2
    return y


def read_after_delete(t, o):
    del o.old
    return t + getattr(o, "old", 5)


class Slotted:
    __slots__ = ("v",)


def delete_slot(t, o):
    y = t * 2
    del o.v
    return y + hasattr(o, "v")


def make_slotted():
    s = Slotted()
    s.v = 1
    return s


lin = nn.Linear(5, 3)


def delete_module_attr(t, m):
    del m.extra
    return m(t)


def make_module():
    torch.manual_seed(5)
    m = nn.Linear(5, 3)
    m.extra = 1
    return m


for name, fn, args, reason in [
    ("deleting an absent attribute (eager raises)", delete_absent, lambda: (x, Holder()), "does not have"),
    ("reading an attribute after deleting it", read_after_delete, lambda: (x, make_holder()), "after it was deleted"),
    ("deleting a slot", delete_slot, lambda: (x, make_slotted()), "slot"),
    ("deleting through nn.Module.__delattr__", delete_module_attr, lambda: (x, make_module()), "__delattr__"),
]:
    tracejit.reset()
    ref_args, res_args = args(), args()
    want = fn(*ref_args)
    got = tracejit.compile(fn, backend=BACKEND)(*res_args)
    state = lambda objs: [sorted(vars(a)) if isinstance(a, Holder) else hasattr(a, "v") if isinstance(a, Slotted)
                          else hasattr(a, "extra") for a in objs[1:]]
    check(same(got.detach(), want.detach()) and state(ref_args) == state(res_args), f"{name}: matches eager")
    ex = tracejit.explain(fn)(*args())
    check(ex.graph_break_count >= 1 and all(reason in r.reason for r in ex.break_reasons),
          f"{name}: breaks naming why ({[r.reason for r in ex.break_reasons]})")


# copy.deepcopy
def deepcopy_tensor(t):
    c = copy.deepcopy(t.detach())
    c.add_(1)
    return c * t


def deepcopy_containers(t):
    cfg = copy.deepcopy({"scale": 2.0, "dims": [1, 2], "name": "x"})
    cfg["dims"].append(3)
    a = t.detach() * 2
    pair = copy.deepcopy([a, (a, 4)])
    pair[0].mul_(10)  # one copy of `a`, shared by both places, as deepcopy's memo does
    return t * cfg["scale"] + pair[1][0], len(cfg["dims"]), pair[1][1]


def deepcopy_namedtuple(t):
    p = copy.deepcopy(Pair(t.detach(), 3))
    return type(p).__name__, t + p.first * p.second


expect_grad("copy.deepcopy of a tensor", deepcopy_tensor, leaf)
expect_grad("copy.deepcopy of lists, dicts and tuples", deepcopy_containers, leaf)
expect_grad("copy.deepcopy of a namedtuple", deepcopy_namedtuple, leaf)
consts = {"k": [1, 2]}
expect("copy.deepcopy of an input dict is a new dict", lambda t, d: (copy.deepcopy(d) is not d, copy.deepcopy(d) == d, t + 1),
       (x, consts))


def deepcopy_module(t):
    m = copy.deepcopy(lin)
    return m(t)


def deepcopy_leaf(t):
    return copy.deepcopy(t) * 2


for name, fn, args, reason in [
    ("copy.deepcopy of an nn.Module", deepcopy_module, lambda: (x,), "nn.Module"),
    ("copy.deepcopy of a tensor that requires grad", deepcopy_leaf, lambda: (x.clone().requires_grad_(),),
     "requires grad"),
]:
    tracejit.reset()
    want = fn(*args())
    got = tracejit.compile(fn, backend=BACKEND)(*args())
    check(same(got.detach(), want.detach()), f"{name}: matches eager")
    ex = tracejit.explain(fn)(*args())
    check(ex.graph_break_count == 1 and reason in ex.break_reasons[0].reason,
          f"{name}: one break naming why ({[r.reason for r in ex.break_reasons]})")


# torch.autograd.grad
def grad_of_input(t):
    y = (t.sin() * 2).sum()
    g, = torch.autograd.grad(y, t)
    return g * 3, y.detach()


def grad_of_two(a, b):
    y = (a * b).sum()
    return torch.autograd.grad(y, [a, b])


def grad_of_params(t):
    loss = lin(t).pow(2).mean()
    grads = torch.autograd.grad(loss, list(lin.parameters()))
    return [g * 1.0 for g in grads], lin.weight.grad is None


def grad_with_outputs(t):
    y = t.exp()
    return torch.autograd.grad(y, t, grad_outputs=torch.ones_like(y) * 0.5)[0]


def grad_retained(t):
    y = (t * t).sum()
    g1, = torch.autograd.grad(y, t, retain_graph=True)
    g2, = torch.autograd.grad(y, t)
    return g1 + g2


def leaves2():
    return torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)


for name, fn, make_args in [
    ("torch.autograd.grad of an input", grad_of_input, leaf),
    ("torch.autograd.grad of two inputs", grad_of_two, leaves2),
    ("torch.autograd.grad of a module's parameters (no .grad written)", grad_of_params, lambda: (x,)),
    ("torch.autograd.grad with grad_outputs", grad_with_outputs, leaf),
    ("torch.autograd.grad twice with retain_graph", grad_retained, leaf),
]:
    tracejit.reset()
    torch.manual_seed(3)
    ref_args = make_args()
    torch.manual_seed(3)
    res_args = make_args()
    want = fn(*ref_args)
    got = tracejit.compile(fn, backend=BACKEND)(*res_args)
    check(same(got, want), f"{name}: matches eager")
    check(lin.weight.grad is None and all(a.grad is None for a in res_args), f"{name}: no .grad written")
    ex = tracejit.explain(fn)(*make_args())
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
                f"{name}: graphs/breaks ({[r.reason[:120] for r in ex.break_reasons]})")


def grad_create_graph(t):
    y = (t ** 3).sum()
    g, = torch.autograd.grad(y, t, create_graph=True)
    return g.sum()


def grad_of_intermediate(t):
    h = t * 2
    y = h.sin().sum()
    return torch.autograd.grad(y, h)[0]


def grad_unused(a, b):
    return torch.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)


# The walk from the root to the leaves is one for both (translate_backward.cpp's
# walk_to_leaves); each names its root in the refusal.
def grad_through_made_leaf(t):
    w = torch.ones(4, 5).requires_grad_()
    return torch.autograd.grad((t * w).sum(), t)[0]


def backward_through_made_leaf(t):
    w = torch.ones(4, 5).requires_grad_()
    (t * w).sum().backward()
    return w.grad


for name, fn, make_args, reason in [
    ("torch.autograd.grad(create_graph=True)", grad_create_graph, leaf, "create_graph"),
    ("torch.autograd.grad of an intermediate", grad_of_intermediate, leaf, "intermediate"),
    ("torch.autograd.grad with an unused input", grad_unused, leaves2, "does not reach"),
    ("torch.autograd.grad through a tensor made to require grad in the frame", grad_through_made_leaf, leaf,
     "the output reaches a tensor made to require grad in the frame"),
    ("Tensor.backward through a tensor made to require grad in the frame", backward_through_made_leaf, leaf,
     "the loss reaches a tensor made to require grad in the frame (aten.requires_grad_.default), a leaf whose "
     ".grad the graph does not keep"),
]:
    tracejit.reset()
    torch.manual_seed(4)
    ref_args = make_args()
    torch.manual_seed(4)
    res_args = make_args()
    want = fn(*ref_args)
    got = tracejit.compile(fn, backend=BACKEND)(*res_args)
    check(same(tuple(g.detach() if isinstance(g, torch.Tensor) else g for g in (want if isinstance(want, tuple) else (want,))),
               tuple(g.detach() if isinstance(g, torch.Tensor) else g for g in (got if isinstance(got, tuple) else (got,)))),
          f"{name}: matches eager")
    ex = tracejit.explain(fn)(*make_args())
    check(ex.graph_break_count == 1 and reason in ex.break_reasons[0].reason,
          f"{name}: one break naming why ({[r.reason for r in ex.break_reasons]})")

finish()
