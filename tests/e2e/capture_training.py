"""Issue 42, item 2: the idioms of a training loop traced, each compiled and
run against eager on twin models (same initial parameters), comparing the
results, the parameters and the gradients after every step, and counting
graphs and breaks with tracejit.explain / tracejit.counters():
`optimizer.zero_grad(set_to_none=True)` (`p.grad = None` replayed after
the graph), `.data` reads and in-place writes, `p.grad = tensor`, an LR
scheduler's wrapper of `optimizer.step` (a weakref call), `clip_grad_value_`
over a generator, `tracejit.compile(opt.step)` (a bound method whose code
lives in torch), a deep model's `model.parameters()` before any tensor op
(the trace budget), and deepcopy/pickle of a compiled function. The shared
trials optimizer_step_with_scheduler, trace_budget_parameters,
explain_hides_skipped_resume, zero_grad_breaks, compile_bound_torch_method
and deepcopy_compiled_fn are these cases (clip_grad_norm_generator and
device_str_factory are in capture_idioms.py, many_instances in
capture_instances.py, compile_all_listcomp in compile_all_listcomp.py,
hook_after_compile in module_hooks.py)."""
import copy
import pickle

import torch
import torch.nn as nn

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)


def twins(make):
    a = make()
    return a, copy.deepcopy(a)


def same_tensors(xs, ys):
    xs, ys = list(xs), list(ys)
    return len(xs) == len(ys) and all(
        (x is None and y is None) or (x is not None and y is not None and torch.allclose(x, y, atol=1e-5))
        for x, y in zip(xs, ys))


def grads(model):
    return [p.grad for p in model.parameters()]


def graphs_and_breaks(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), "; ".join(r.reason[:160] for r in ex.break_reasons[:3])


def backward(model, x):
    model(x).sum().backward()


x = torch.randn(4, 8)

# ---- zero_grad(set_to_none=True): `p.grad = None`, a side effect replayed after the graph
for set_to_none in (True, False):
    tracejit.reset()
    eager_m, comp_m = twins(lambda: nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)))
    eager_opt = torch.optim.SGD(eager_m.parameters(), lr=0.1)
    comp_opt = torch.optim.SGD(comp_m.parameters(), lr=0.1)

    def step(model, opt, x, set_to_none=set_to_none):
        opt.zero_grad(set_to_none=set_to_none)
        return model(x).sum()

    compiled = tracejit.compile(step, backend=BACKEND)
    for i in range(3):
        backward(eager_m, x)
        backward(comp_m, x)
        want = step(eager_m, eager_opt, x)
        got = compiled(comp_m, comp_opt, x)
        check(torch.allclose(got, want), f"zero_grad(set_to_none={set_to_none}) step {i}: same loss")
        check(same_tensors(grads(comp_m), grads(eager_m)),
              f"zero_grad(set_to_none={set_to_none}) step {i}: grads as eager's "
              f"({'None' if set_to_none else 'zeros'})")
    backward(comp_m, x)
    counts, why = graphs_and_breaks(step, comp_m, comp_opt, x)
    check_equal(counts, (1, 0), f"zero_grad(set_to_none={set_to_none}): graphs/breaks {why}")


# p.grad = None, then read back in the same trace; p.grad = a tensor of the graph
def reset_and_read(model, x):
    for p in model.parameters():
        p.grad = None
    seen = [p.grad is None for p in model.parameters()]
    return model(x).sum(), seen


def set_grad_tensor(model, x):
    y = model(x).sum()
    for p in model.parameters():
        p.grad = torch.ones_like(p) * y.detach()
    return y


for name, fn in (("p.grad = None read back", reset_and_read), ("p.grad = a tensor", set_grad_tensor)):
    tracejit.reset()
    eager_m, comp_m = twins(lambda: nn.Linear(8, 3))
    backward(eager_m, x)
    backward(comp_m, x)
    want = fn(eager_m, x)
    got = tracejit.compile(fn, backend=BACKEND)(comp_m, x)
    same = (torch.allclose(got[0], want[0]) and got[1] == want[1]) if isinstance(want, tuple) else torch.allclose(got, want)
    check(same, f"{name}: same result")
    check(same_tensors(grads(comp_m), grads(eager_m)), f"{name}: grads as eager's")
    counts, why = graphs_and_breaks(fn, comp_m, x)
    check_equal(counts, (1, 0), f"{name}: graphs/breaks {why}")


def wrong_grad(model):
    try:
        model.weight.grad = torch.zeros(2)  # another size: eager raises
        return "no error"
    except RuntimeError as e:
        return type(e).__name__


wm = nn.Linear(8, 3)
check_equal(tracejit.compile(wrong_grad, backend=BACKEND)(wm), wrong_grad(nn.Linear(8, 3)),
            "p.grad = a tensor of another size raises as in eager")


# ---- Tensor.data: reads are detach() aliases, in-place writes reach the parameter
def data_idioms(model, x):
    w = model.weight.data  # no grad, same storage
    model.bias.data.mul_(0.5)
    model.weight.data.clamp_(-0.1, 0.1)
    return model(x).sum() + w.sum(), w.requires_grad


tracejit.reset()
eager_m, comp_m = twins(lambda: nn.Linear(8, 3))
want = data_idioms(eager_m, x)
got = tracejit.compile(data_idioms, backend=BACKEND)(comp_m, x)
check(torch.allclose(got[0], want[0]) and got[1] == want[1], "Tensor.data: same result, no grad")
check(same_tensors(comp_m.parameters(), eager_m.parameters()), "Tensor.data: in-place writes reach the parameters")
check(all(p.requires_grad for p in comp_m.parameters()), "Tensor.data: parameters still require grad")
counts, why = graphs_and_breaks(data_idioms, comp_m, x)
check_equal(counts, (1, 0), f"Tensor.data: graphs/breaks {why}")


def data_assign(model, x):
    model.weight.data = model.weight.data * 2  # replayed after the graph; its use with grad breaks (capture_data_writes.py)
    return model(x).sum()


tracejit.reset()
eager_m, comp_m = twins(lambda: nn.Linear(8, 3))
check(torch.allclose(tracejit.compile(data_assign, backend=BACKEND)(comp_m, x), data_assign(eager_m, x)),
      "Tensor.data assignment: same result")
ex = tracejit.explain(data_assign)(copy.deepcopy(eager_m), x)
check(any("whose .data the graph assigned" in r.reason for r in ex.break_reasons),
      "Tensor.data assignment, then a use with grad: a break naming it")
check(torch.equal(comp_m.weight, eager_m.weight), "Tensor.data assignment: the weight as eager's")


# ---- clip_grad_value_ over a generator
def clip_value(model, x):
    nn.utils.clip_grad_value_(model.parameters(), 0.01)
    return model(x).sum()


tracejit.reset()
eager_m, comp_m = twins(lambda: nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2)))
backward(eager_m, x)
backward(comp_m, x)
want = clip_value(eager_m, x)
got = tracejit.compile(clip_value, backend=BACKEND)(comp_m, x)
check(torch.allclose(got, want) and same_tensors(grads(comp_m), grads(eager_m)), "clip_grad_value_: grads as eager's")
counts, why = graphs_and_breaks(clip_value, comp_m, x)
check_equal(counts, (1, 0), f"clip_grad_value_: graphs/breaks {why}")


# ---- LR schedulers: their wrapper of optimizer.step calls a weakref
def make_sched(kind, opt):
    if kind == "LambdaLR":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 ** s)
    if kind == "StepLR":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)


for opt_kind in ("SGD", "AdamW"):
    for sched_kind in ("LambdaLR", "StepLR", "OneCycleLR"):
        tracejit.reset()
        eager_m, comp_m = twins(lambda: nn.Linear(8, 4))

        def make_opt(m):
            if opt_kind == "SGD":
                return torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            return torch.optim.AdamW(m.parameters(), lr=0.01)

        eager_opt, comp_opt = make_opt(eager_m), make_opt(comp_m)
        eager_s, comp_s = make_sched(sched_kind, eager_opt), make_sched(sched_kind, comp_opt)

        def opt_step(opt):
            opt.step()

        compiled = tracejit.compile(opt_step, backend=BACKEND)
        for i in range(3):
            backward(eager_m, x)
            backward(comp_m, x)
            opt_step(eager_opt)
            compiled(comp_opt)
            eager_s.step()
            comp_s.step()
            eager_opt.zero_grad()
            comp_opt.zero_grad()
        tag = f"{opt_kind} + {sched_kind}"
        check(same_tensors(comp_m.parameters(), eager_m.parameters()), f"{tag}: parameters as eager's after 3 steps")
        check_equal(comp_opt._step_count, eager_opt._step_count, f"{tag}: the scheduler's step count")
        c = tracejit.counters()
        check(c["graphs_compiled"] >= 1 and c["graph_breaks"] == 0,
              f"{tag}: opt.step compiled without breaks ({c['graphs_compiled']} graphs, {c['graph_breaks']} breaks)")


# ---- tracejit.compile(opt.step): the target's own code is traced although it lives in torch
for opt_kind in ("SGD", "AdamW"):
    tracejit.reset()
    eager_m, comp_m = twins(lambda: nn.Linear(8, 4))
    mk = (lambda m: torch.optim.SGD(m.parameters(), lr=0.1)) if opt_kind == "SGD" else \
        (lambda m: torch.optim.AdamW(m.parameters(), lr=0.01))
    eager_opt, comp_opt = mk(eager_m), mk(comp_m)
    cstep = tracejit.compile(comp_opt.step, backend=BACKEND)
    for i in range(3):
        backward(eager_m, x)
        backward(comp_m, x)
        eager_opt.step()
        cstep()
    check(same_tensors(comp_m.parameters(), eager_m.parameters()), f"compile({opt_kind}.step): parameters as eager's")
    check(tracejit.counters()["graphs_compiled"] >= 1, f"compile({opt_kind}.step): compiled a graph")
    backward(comp_m, x)
    ex = tracejit.explain(comp_opt.step)()
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"explain({opt_kind}.step): graphs/breaks")


# ---- a deep model: model.parameters() before the first tensor op stays within the trace budget
def clip_and_step(model, opt):
    nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
    opt.step()


for depth in (1, 8, 16):
    tracejit.reset()
    eager_m, comp_m = twins(lambda: nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.GELU())
                                                   for _ in range(depth)]))
    eager_opt = torch.optim.SGD(eager_m.parameters(), lr=0.1)
    comp_opt = torch.optim.SGD(comp_m.parameters(), lr=0.1)
    compiled = tracejit.compile(clip_and_step, backend=BACKEND)
    for i in range(2):
        backward(eager_m, x)
        backward(comp_m, x)
        clip_and_step(eager_m, eager_opt)
        compiled(comp_m, comp_opt)
    check(same_tensors(comp_m.parameters(), eager_m.parameters()), f"depth {depth}: parameters as eager's")
    backward(comp_m, x)
    counts, why = graphs_and_breaks(clip_and_step, comp_m, comp_opt)
    check_equal(counts, (1, 0), f"depth {depth}: clip_grad_norm_ + opt.step in one graph {why}")


# ---- a training step of a deep model (trial explain_hides_skipped_resume.py): backward,
# clipping, opt.step and zero_grad in one graph (issue 42 item 3), no frame run uncompiled
def train_step(model, opt, x):
    loss = model(x).sum()
    loss.backward()
    nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=False)
    return loss.detach()


tracejit.reset()
eager_m, comp_m = twins(lambda: nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.GELU())
                                               for _ in range(8)]))
eager_opt = torch.optim.SGD(eager_m.parameters(), lr=0.1)
comp_opt = torch.optim.SGD(comp_m.parameters(), lr=0.1)
compiled = tracejit.compile(train_step, backend=BACKEND)
for i in range(3):
    want = train_step(eager_m, eager_opt, x)
    got = compiled(comp_m, comp_opt, x)
    check(torch.allclose(got, want), f"deep train step {i}: same loss")
check(same_tensors(comp_m.parameters(), eager_m.parameters()), "deep train step: parameters as eager's")
ex = tracejit.explain(train_step)(comp_m, comp_opt, x)
check_equal((ex.graph_count, ex.graph_break_count, len(ex.skipped_frames)), (1, 0, 0),
            f"deep train step: 1 graph, no break, no frame run uncompiled "
            f"({[r.reason[:80] for r in ex.break_reasons]})")


# ---- clip_grad_norm_(error_if_nonfinite=True): its data-dependent `if ...: raise` is a
# check after the graph (issue 42's distributions rule), so model.parameters() handed to
# it stays a generator in one graph; a non-finite norm raises eager's RuntimeError
def clip_checked(model, x):
    y = model(x).sum()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    return y * 2


tracejit.reset()
eager_m, comp_m = twins(lambda: nn.Linear(8, 3))
backward(eager_m, x)
backward(comp_m, x)
want = clip_checked(eager_m, x)
check(torch.allclose(tracejit.compile(clip_checked, backend=BACKEND)(comp_m, x), want)
      and same_tensors(grads(comp_m), grads(eager_m)), "clip_grad_norm_(error_if_nonfinite=True): as eager")
ex = tracejit.explain(clip_checked)(comp_m, x)
check_equal((ex.graph_count, ex.graph_break_count), (1, 0),
            f"clip_grad_norm_(error_if_nonfinite=True) with model.parameters(): one graph "
            f"({[r.reason[:100] for r in ex.break_reasons]})")
for m in (eager_m, comp_m):
    m.weight.grad[0, 0] = float("inf")
raised = []
for fn in (clip_checked, tracejit.compile(clip_checked, backend=BACKEND)):
    try:
        fn(eager_m if fn is clip_checked else comp_m, x)
        raised.append(None)
    except RuntimeError as e:
        raised.append(str(e).split(",")[0])
check(raised[0] is not None and raised[1] is not None,
      f"clip_grad_norm_(error_if_nonfinite=True) of a non-finite norm raises RuntimeError as eager ({raised})")


# ---- explain lists frames that ran uncompiled without a trace: torch code the tracer
# would inline (torch.nn._reduction's get_enum), called by CPython after a break inside
# the library (F.ctc_loss with tensor lengths: aten::ctc_loss.Tensor has no meta kernel,
# so the break is at the user's call and CPython runs ctc_loss)
def ctc_checked(log_probs, targets, input_lengths, target_lengths):
    y = log_probs * 1.0
    return y * 2, torch.nn.functional.ctc_loss(y, targets, input_lengths, target_lengths)


T_ctc = 12
ctc_args = (torch.randn(T_ctc, 2, 5).log_softmax(2), torch.randint(1, 5, (2, 4)),
            torch.tensor([T_ctc, T_ctc - 3]), torch.tensor([4, 3]))
tracejit.reset()
want = ctc_checked(*ctc_args)
got = tracejit.compile(ctc_checked, backend=BACKEND)(*ctc_args)
check(torch.allclose(got[0], want[0]) and torch.allclose(got[1], want[1]), "ctc_loss(...) after a break: as eager")
ex = tracejit.explain(ctc_checked)(*ctc_args)
skipped = [r for r in ex.skipped_frames if "get_enum ran uncompiled" in r.reason]
check(len(skipped) == 1 and skipped[0].filename.endswith("torch/nn/_reduction.py"),
      f"explain: the get_enum frame CPython ran is listed once with its file ({ex.skipped_frames})")
check("Frames run uncompiled:" in str(ex), "explain's text lists the frames run uncompiled")
check(ex.graph_break_count >= 1 and all("ran uncompiled" not in r.reason for r in ex.break_reasons),
      "explain: skipped frames are not counted as breaks")


# ---- a compiled function held by a model: deepcopy and pickle as a plain function
@tracejit.compile(backend=BACKEND)
def act(t):
    return torch.nn.functional.gelu(t) * 1.1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.act = act

    def forward(self, t):
        return self.act(self.fc(t))


net = Net()
net(x)
twin = copy.deepcopy(net)
check(twin.act is act and torch.allclose(twin(x), net(x)), "deepcopy of a model holding a compiled function")
check(copy.copy(act) is act, "copy.copy of a compiled function is itself")
check(pickle.loads(pickle.dumps(act)) is act, "pickle of a compiled function by reference")
check(torch.allclose(tracejit.compile(lambda t: t + 1, backend=BACKEND)(x), x + 1), "a compiled lambda still runs")
try:
    pickle.dumps(tracejit.compile(lambda t: t + 1))
    check(False, "pickle of a compiled lambda refuses, as pickle of the lambda does")
except (pickle.PicklingError, TypeError, AttributeError) as e:
    check(True, f"pickle of a compiled lambda refuses, as pickle of the lambda does ({type(e).__name__})")

finish()
