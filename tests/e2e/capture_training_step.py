"""Issue 42, item 3: a training step as one graph. `loss.backward()` is
traced (one tracejit::autograd_grad node and eager's AccumulateGrad writes
of `.grad`), so forward + loss + backward + clip_grad_norm_ + opt.step() +
zero_grad() is one graph with no break: for SGD/Adam/AdamW, with and
without a scheduler, and on the zoo's GPT, BERT, VAE, DCGAN (two
optimizers) and LSTM LM. Losses and final parameters are eager's bit for
bit on eager/aot_eager, and within eager's own error against float64
(tracejit.same) on llvm; AOT takes the whole step (no op-by-op fallback).
Also: accumulate vs set (`zero_grad(set_to_none=False/True)`, two
backwards before a step, torch.autograd.backward), a parameter without a
gradient, a frozen one, and each refused case breaking with its reason
(create_graph, inputs=, a custom Function on the
path, a leaf made in the frame, history from before the frame, a tensor
requiring grad that outlives the graph) or raising eager's error (a non-scalar loss, a second
backward through a freed graph)."""
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from zoo import PROGRAMS  # noqa: E402

EXACT = BACKEND in ("eager", "aot_eager")


def flat(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for item in v for t in flat(item)]
    return []


def same(got, want, fp64=None):
    got, want = flat(got), flat(want)
    if len(got) != len(want):
        return False
    if EXACT:
        return all(g.dtype == w.dtype and torch.equal(g, w) for g, w in zip(got, want))
    if fp64 is not None:
        return tracejit.same(want, got, fp64_ref=flat(fp64))
    return all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))


def to_double(v):
    if isinstance(v, torch.Tensor):
        return v.double() if v.is_floating_point() else v
    if isinstance(v, (list, tuple)):
        return type(v)(to_double(t) for t in v)
    return v


def grads_match(a, b):
    """Same None-ness of every .grad, and equal values where set."""
    ga = [p.grad for p in a.parameters()]
    gb = [p.grad for p in b.parameters()]
    if [g is None for g in ga] != [g is None for g in gb]:
        return False
    return same([g for g in ga if g is not None], [g for g in gb if g is not None])


def counts(fn, *args):
    ex = tracejit.explain(fn)(*args)
    return (ex.graph_count, ex.graph_break_count), " | ".join(r.reason for r in ex.break_reasons)


def fallbacks():
    return tracejit.counters().get("backend_fallbacks", 0)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


torch.manual_seed(1)
batches = [(torch.randn(6, 8), torch.randn(6, 4)) for _ in range(4)]

# ---- SGD / Adam / AdamW, with and without a scheduler: one graph, eager's numbers
OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}


def full_step(model, opt, sched, batch):
    x, y = batch
    loss = F.mse_loss(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if sched is not None:
        sched.step()
    opt.zero_grad()
    return loss.detach()


for name, make_opt in OPTIMIZERS.items():
    for with_sched in (False, True):
        label = f"{name}{' + StepLR' if with_sched else ''}"
        tracejit.reset()

        def make():
            m = mlp()
            o = make_opt(m.parameters())
            s = torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.8) if with_sched else None
            return m, o, s

        ref, res = make(), make()
        compiled = tracejit.compile(full_step, backend=BACKEND)
        before = fallbacks()
        ref_losses = [full_step(*ref, b) for b in batches]
        res_losses = [compiled(*res, b) for b in batches]
        check(same(res_losses, ref_losses), f"{label}: losses equal eager's")
        check(same(list(res[0].parameters()), list(ref[0].parameters())), f"{label}: final parameters equal eager's")
        check(grads_match(res[0], ref[0]), f"{label}: grads after zero_grad equal eager's")
        check_equal(fallbacks() - before, 0, f"{label}: no op-by-op fallback")
        tracejit.reset()
        fresh = make()
        got, why = counts(full_step, *fresh, batches[0])
        check_equal(got, (1, 0), f"{label}: first step (grads None) is one graph, no break [{why}]")
        got, why = counts(full_step, *fresh, batches[1])
        check_equal(got, (1, 0), f"{label}: next step (grads zero tensors, accumulated) is one graph [{why}]")


# ---- accumulate vs set
def run_pair(step, make, steps=3, what=""):
    tracejit.reset()
    ref, res = make(), make()
    compiled = tracejit.compile(step, backend=BACKEND)
    ok = True
    for i in range(steps):
        ok &= same(compiled(*res, batches[i]), step(*ref, batches[i]))
    check(ok, f"{what}: results equal eager's")
    check(same(list(res[0].parameters()), list(ref[0].parameters())), f"{what}: parameters equal eager's")
    check(grads_match(res[0], ref[0]), f"{what}: .grad equal eager's (None where eager's is None)")
    tracejit.reset()
    return counts(step, *make(), batches[0])


def sgd_state():
    m = mlp()
    return m, torch.optim.SGD(m.parameters(), lr=0.1)


def set_to_none_step(model, opt, batch):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward()
    opt.step()
    return loss


got, why = run_pair(set_to_none_step, sgd_state, what="zero_grad(set_to_none=True) first, loss returned")
check_equal(got, (1, 0), f"zero_grad(set_to_none=True) step is one graph [{why}]")


def accumulate_step(model, opt, batch):
    # no zero_grad: gradients accumulate over the calls, as in eager
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


got, why = run_pair(accumulate_step, sgd_state, what="accumulating .grad over calls")
check_equal(got, (1, 0), f"accumulating step is one graph [{why}]")


def two_backwards(model, opt, batch):
    x, y = batch
    opt.zero_grad(set_to_none=True)
    F.mse_loss(model(x[:3]), y[:3]).backward()
    loss = F.mse_loss(model(x[3:]), y[3:])
    torch.autograd.backward(loss)
    opt.step()
    return loss.detach()


got, why = run_pair(two_backwards, sgd_state, what="two backwards before a step")
check_equal(got, (1, 0), f"two backwards before a step are one graph [{why}]")


class WithSpare(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.lin = nn.Linear(8, 4)
        self.unused = nn.Parameter(torch.randn(4))  # never reached by the loss: .grad stays None
        self.frozen = nn.Parameter(torch.randn(4), requires_grad=False)

    def forward(self, x):
        return self.lin(x) + self.frozen


def spare_state():
    m = WithSpare()
    return m, torch.optim.Adam(m.parameters(), lr=0.01)


got, why = run_pair(set_to_none_step, spare_state, what="a parameter without a gradient and a frozen one")
check_equal(got, (1, 0), f"a step with an unused parameter is one graph [{why}]")


def explicit_gradient(model, opt, batch):
    out = model(batch[0]).sum(0)
    out.backward(torch.ones(4) * 0.5)
    opt.step()
    opt.zero_grad()
    return out.detach()


got, why = run_pair(explicit_gradient, sgd_state, what="backward(gradient)")
check_equal(got, (1, 0), f"backward(gradient) is one graph [{why}]")

# ---- refused: a break before the call with its reason, results as eager's
REFUSED = {}


def create_graph_step(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(create_graph=True)
    return loss.detach()


def inputs_step(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward(inputs=[model[0].weight])
    return loss.detach()


def outliving_step(model, opt, batch):
    loss = F.mse_loss(model(batch[0]), batch[1])
    loss.backward()
    opt.step()
    return model(batch[0])  # a new forward after the step: live history


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def function_step(model, opt, batch):
    loss = Doubled.apply(model(batch[0])).pow(2).mean()
    loss.backward()
    return loss.detach()


def fresh_leaf_step(model, opt, batch):
    scale = torch.ones(4).requires_grad_()  # a leaf made in the frame: its .grad is not the graph's
    loss = (model(batch[0]) * scale).pow(2).mean()
    loss.backward()
    return loss.detach(), scale.grad


for step, make, reason in [
    (inputs_step, sgd_state, "inputs="),
    (outliving_step, sgd_state, "outlives the graph"),
    (function_step, sgd_state, "custom autograd.Function"),
    (fresh_leaf_step, sgd_state, "made to require grad in the frame"),
]:
    tracejit.reset()
    ref, res = make(), make()
    compiled = tracejit.compile(step, backend=BACKEND)
    ok = True
    for i in range(2):
        ok &= same(compiled(*res, batches[i]), step(*ref, batches[i]))
    check(ok and same(list(res[0].parameters()), list(ref[0].parameters())) and grads_match(res[0], ref[0]),
          f"refused {step.__name__}: results, parameters and grads equal eager's")
    tracejit.reset()
    (graphs, breaks), why = counts(step, *make(), batches[0])
    check(breaks >= 1 and reason in why, f"refused {step.__name__}: breaks with reason '{reason}' [{why}]")


# create_graph=True: the step's frame runs unchanged, but the model's forward
# is compiled as its own frame; its backward node computes the gradients
# again as ATen ops from the forward's inputs, so they have eager's history
# on every backend (tests/e2e/aot_double_backward.py differentiates them).
tracejit.reset()
ref, res = sgd_state(), sgd_state()
create_graph_step(*ref, batches[0])
check(all(p.grad is not None and p.grad.requires_grad for p in ref[0].parameters()),
      "create_graph=True in eager: gradients with history")
try:
    tracejit.compile(create_graph_step, backend=BACKEND)(*res, batches[0])
    raised = ""
except RuntimeError as e:
    raised = str(e)
check(not raised and all(p.grad.requires_grad for p in res[0].parameters()) and grads_match(res[0], ref[0]),
      f"create_graph=True through a compiled forward: gradients with history, as eager's [{raised[:120]}]")


@tracejit.compile(backend=BACKEND)
def calls_disabled(model, opt, batch):
    return tracejit.disable(create_graph_step)(model, opt, batch)


res, ref = sgd_state(), sgd_state()
try:
    ok = same(calls_disabled(*res, batches[0]), create_graph_step(*ref, batches[0]))
except RuntimeError as e:
    ok = f"raised {e}"
check(ok is True and all(p.grad.requires_grad for p in res[0].parameters()) and grads_match(res[0], ref[0]),
      f"create_graph=True in a tracejit.disable'd function called from compiled code: eager's ({ok})")


def history_step(model, h, y):
    loss = F.mse_loss(model(h), y)
    loss.backward()
    return loss.detach()


tracejit.reset()
m_ref, m_res = mlp(), mlp()
pre_ref, pre_res = nn.Linear(8, 8), None
pre_res = copy.deepcopy(pre_ref)
x0, y0 = batches[0]
compiled = tracejit.compile(history_step, backend=BACKEND)
want = history_step(m_ref, pre_ref(x0), y0)
got = compiled(m_res, pre_res(x0), y0)
check(same(got, want) and same([p.grad for p in pre_res.parameters()], [p.grad for p in pre_ref.parameters()]),
      "backward into history from before the frame: grads of the earlier module equal eager's")
tracejit.reset()
(_, breaks), why = counts(history_step, mlp(), pre_ref(x0), y0)
check(breaks >= 1 and "autograd history from before the frame" in why,
      f"backward into history from before the frame breaks [{why}]")


def non_scalar(model, opt, batch):
    model(batch[0]).backward()


def twice(model, opt, batch):
    loss = model(batch[0]).pow(2).mean()
    loss.backward()
    loss.backward()


for fn, what in ((non_scalar, "a non-scalar loss without a gradient"), (twice, "a second backward of one graph")):
    tracejit.reset()
    eager_error = check_raises(RuntimeError, lambda: fn(*sgd_state(), batches[0]), f"eager: {what} raises")
    compiled_error = check_raises(RuntimeError, lambda: tracejit.compile(fn, backend=BACKEND)(*sgd_state(), batches[0]),
                                  f"compiled: {what} raises")
    check(eager_error is not None and compiled_error is not None and str(eager_error) == str(compiled_error),
          f"{what}: the compiled error is eager's")


# ---- a returned loss keeps eager's look: requires grad, a grad_fn, a second backward raises
tracejit.reset()
state = sgd_state()
loss = tracejit.compile(set_to_none_step, backend=BACKEND)(*state, batches[0])
check(loss.requires_grad and loss.grad_fn is not None, "the returned loss requires grad and has a grad_fn, as eager's")
check_raises(RuntimeError, lambda: loss.backward(), "a backward of the returned loss raises, as eager's")

# ---- the zoo's training steps
for name in ("gpt", "bert", "vae", "dcgan", "lstm_lm"):
    tracejit.reset()
    program = PROGRAMS[name]("test")
    ref, res, fp64 = program.make_state(), program.make_state(), program.make_state(torch.float64)
    for s in (ref, res, fp64):
        s[0].train()
    compiled = tracejit.compile(program.train_step, backend=BACKEND)
    before = fallbacks()
    ref_losses, res_losses, fp64_losses = [], [], []
    for batch in program.batches:
        ref_losses.append(program.train_step(ref, batch))
        res_losses.append(compiled(res, batch))
        fp64_losses.append(program.train_step(fp64, to_double(batch)))
    check(same(res_losses, ref_losses, fp64_losses), f"zoo {name}: losses equal eager's")
    check(same(list(res[0].parameters()), list(ref[0].parameters()), list(fp64[0].parameters())),
          f"zoo {name}: final parameters equal eager's")
    check_equal(fallbacks() - before, 0, f"zoo {name}: no op-by-op fallback")
    tracejit.reset()
    got, why = counts(program.train_step, program.make_state(), program.batches[0])
    check_equal(got, (1, 0), f"zoo {name}: the training step is one graph, no break [{why}]")

finish()
