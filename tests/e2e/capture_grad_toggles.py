"""Issue 42 (session 23): `requires_grad` switched on parameters inside a
compiled training step, as public training scripts do.
- CycleGAN/pix2pix's `set_requires_grad(netD, False)` before the
  generator's loss and its backward, `True` again before the
  discriminator's: one graph, no break; losses, parameters, grads and
  Adam's state equal eager's, D's flags True after each call (before,
  every assignment broke: 13 breaks in the probe's step);
- `p.requires_grad_(False)` / `p.requires_grad_()`, an in-place write under
  no_grad while frozen, the flag read back, a forward while frozen (its
  result does not require grad);
- freezing a layer for good inside the step (the flags stay False after
  the call; the next call, seeing them False, recompiles once as the
  guard on requires_grad says);
- a layer frozen for the backward, then Adam over every parameter (the
  frozen layer's zeroed grads still move it through Adam's state, as in
  eager's step): one graph, the optimizer's writes reach the frozen
  parameters' memory;
- `h.requires_grad = False` on a non-leaf raises as eager does."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit
from e2e_util import BACKEND, EXACT, check, check_equal, finish, tensors_same

torch.manual_seed(0)
G0 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D0 = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
xs = [torch.randn(3, 4) for _ in range(5)]


def same(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return tensors_same(a, b, rtol=1e-4, atol=1e-5)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def state_of(*nets_and_opts):
    out = []
    for o in nets_and_opts:
        if isinstance(o, nn.Module):
            out += [(p.detach().clone(), p.grad.clone() if p.grad is not None else None, p.requires_grad)
                    for p in o.parameters()]
        else:
            out += [[v.clone() for v in s.values() if isinstance(v, torch.Tensor)] for s in o.state.values()]
    return out


# ------------------------------------------------------ CycleGAN's toggling
def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def gan_step(G, D, opt_G, opt_D, x):
    set_requires_grad(D, False)
    opt_G.zero_grad()
    fake = G(x)
    loss_G = F.mse_loss(D(fake), torch.ones(x.shape[0], 1))
    loss_G.backward()
    opt_G.step()
    set_requires_grad(D, True)
    opt_D.zero_grad()
    loss_D = 0.5 * (F.mse_loss(D(fake.detach()), torch.zeros(x.shape[0], 1)) +
                    F.mse_loss(D(x), torch.ones(x.shape[0], 1)))
    loss_D.backward()
    opt_D.step()
    return loss_G.detach(), loss_D.detach()


def run_gan(compiled):
    tracejit.reset()
    G, D = copy.deepcopy(G0), copy.deepcopy(D0)
    opt_G, opt_D = torch.optim.Adam(G.parameters(), lr=0.01), torch.optim.Adam(D.parameters(), lr=0.01)
    fn = tracejit.compile(gan_step, backend=BACKEND) if compiled else gan_step
    outs = [fn(G, D, opt_G, opt_D, x) for x in xs]
    return outs, state_of(G, D, opt_G, opt_D), tracejit.counters()


want, got = run_gan(False), run_gan(True)
check(same(got[0], want[0]), "set_requires_grad: the generator's and discriminator's losses match eager over 5 steps")
check(same(got[1], want[1]), "set_requires_grad: parameters, grads, flags and Adam's state match eager")
check_equal(got[2]["graphs_compiled"], 2, "set_requires_grad: two compiles (the first call makes the grads)")
G, D = copy.deepcopy(G0), copy.deepcopy(D0)
ex = tracejit.explain(gan_step)(G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters()), xs[0])
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "set_requires_grad: the GAN step is one graph, no break")
check(all(p.requires_grad for p in D.parameters()), "set_requires_grad: D's parameters require grad after the call")


# ------------------------------------------------- requires_grad_ and reads
def frozen_forward(D, x):
    for p in D.parameters():
        p.requires_grad_(False)
    flags = [p.requires_grad for p in D.parameters()]
    with torch.no_grad():
        D[0].weight.mul_(0.5)
    y0 = D(x).sum()
    for p in D.parameters():
        p.requires_grad_()
    loss = D(x).sum() * 2
    loss.backward()
    return y0, loss.detach(), flags, y0.requires_grad


def freeze_first(D, x):
    D[0].weight.requires_grad = False
    D[0].bias.requires_grad_(False)
    loss = D(x).pow(2).mean()
    loss.backward()
    return loss.detach()


def run(fn, compiled):
    tracejit.reset()
    D = copy.deepcopy(D0)
    g = tracejit.compile(fn, backend=BACKEND) if compiled else fn
    outs = [g(D, x) for x in xs[:3]]
    return outs, state_of(D), tracejit.counters()


for fn, what, recompiles in ((frozen_forward, "requires_grad_(False), a write, requires_grad_()", 1),
                             (freeze_first, "a layer frozen inside the step", 1)):
    want, got = run(fn, False), run(fn, True)
    check(same(got[0], want[0]), f"{what}: results match eager")
    check(same(got[1], want[1]), f"{what}: parameters, grads and flags match eager")
    check_equal(got[2]["recompiles"], recompiles, f"{what}: recompiles")
    ex = tracejit.explain(fn)(copy.deepcopy(D0), xs[0])
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{what}: one graph, no break")


# ------------------------------- frozen for the backward, updated by Adam
def frozen_backward_step(D, opt, x):
    for p in D[0].parameters():
        p.requires_grad = False
    loss = D(x).pow(2).mean()
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()  # the frozen layer's zeroed grads still move it (Adam's state), as in eager
    for p in D[0].parameters():
        p.requires_grad = True
    return loss.detach()


def run_frozen(compiled):
    tracejit.reset()
    D = copy.deepcopy(D0)
    opt = torch.optim.Adam(D.parameters(), lr=0.1)
    D(xs[0]).sum().backward()  # every parameter has a grad and Adam state
    opt.step()
    fn = tracejit.compile(frozen_backward_step, backend=BACKEND) if compiled else frozen_backward_step
    outs = [fn(D, opt, x) for x in xs[:4]]
    return outs, state_of(D, opt), tracejit.counters()["recompiles"], (D, opt)


want, got = run_frozen(False), run_frozen(True)
check(same(got[0], want[0]) and same(got[1], want[1]),
      "a layer frozen for the backward, all updated by Adam: losses, parameters, grads and state match eager")
check_equal(got[2], 0, "a layer frozen for the backward: no recompile")
D, opt = run_frozen(False)[3]
ex = tracejit.explain(frozen_backward_step)(D, opt, xs[0])
check_equal((ex.graph_count, ex.graph_break_count), (1, 0), "a layer frozen for the backward: one graph, no break")


# ----------------------------------------------------------- non-leaf raises
def non_leaf(D, x):
    h = D[0](x)
    h.requires_grad = False
    return h


try:
    tracejit.compile(non_leaf, backend=BACKEND)(copy.deepcopy(D0), xs[0])
    raised = None
except RuntimeError as e:
    raised = str(e)
check(raised is not None and "leaf" in raised, f"a non-leaf's requires_grad = False raises as eager ({raised})")


# -------------------------------- frozen after the forward, before backward
# Eager's AccumulateGrad skips a leaf that no longer requires grad when the
# backward runs; the compiled step breaks at the backward (a precise
# reason) rather than accumulating or failing, and a view of a leaf passed
# where the trace saw a leaf is refused by the guards, as eager raises.
def frozen_before_backward(D, x):
    loss = D(x).sum()
    D[0].weight.requires_grad = False
    loss.backward()
    D[0].weight.requires_grad = True
    return loss.detach()


want, got = run(frozen_before_backward, False), run(frozen_before_backward, True)
check(same(got[0], want[0]), "frozen after the forward: results match eager")
check(same(got[1], want[1]), "frozen after the forward: parameters, grads (weight's None) and flags match eager")
check_equal(got[2].get("internal_errors", 0), 0, "frozen after the forward: no internal error")


def freeze_and_write(w, x):
    w.requires_grad = False
    with torch.no_grad():
        w.add_(x)
    w.requires_grad = True
    return w.sum()


tracejit.reset()
compiled_write = tracejit.compile(freeze_and_write, backend=BACKEND)
compiled_write(torch.ones(3, requires_grad=True), torch.ones(3))
base = torch.zeros(5, requires_grad=True)
try:
    compiled_write(base[:3], torch.ones(3))
    raised = None
except RuntimeError as e:
    raised = str(e)
check(raised is not None, f"requires_grad = False on a view of a leaf raises as eager ({raised})")
check(torch.equal(base.detach(), torch.zeros(5)), "a view of a leaf: its base is left unwritten, as eager's")

finish()
