"""create_graph=True backwards through graphs compiled in another frame
(issue 39): a WGAN-GP step's gradient penalty differentiates the critic's
gradient with respect to its input, so the compiled critic's backward node
must hand back gradients with eager's history (it computes them again as
ATen ops from the forward's inputs, compile/aot/backward_node.cpp), where it
raised an error naming tracejit.disable. Checked against eager:
- the WGAN-GP critic step with a compiled generator and a compiled critic
  (two compiled functions; the step itself runs eagerly);
- a penalty on the gradient with respect to the generator's input through
  both compiled functions (two compiled nodes in one create_graph backward);
- the same step compiled as a whole (its frame runs unchanged for
  create_graph=True; the modules' forwards are compiled as frames of their own);
- a third-order gradient of a compiled function of one tensor;
- a graph whose forward cannot be run again as it ran (a random op, an
  input written in place) raises a clear error naming why, not a wrong
  gradient; an input written after the forward raises eager's version error."""
import copy

import torch
import torch.nn as nn

import tracejit
from e2e_util import BACKEND, check, finish


def close(got, want):
    """Equal values: the second-order terms are sums whose order eager's
    engine and the recomputed formulas need not share, so within float
    rounding even on the backends that run ATen's kernels."""
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if (g is None) != (w is None):
            return False
        if g is not None and not torch.allclose(g, w, rtol=1e-5, atol=1e-6):
            return False
    return True


def nets():
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
    critic = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Softplus(), nn.Linear(16, 1))
    return gen, critic


def critic_step(gen, critic, z, real, alpha):
    fake = gen(z)
    interp = (alpha * real + (1 - alpha) * fake.detach()).requires_grad_(True)
    d_interp = critic(interp)
    grads, = torch.autograd.grad(d_interp.sum(), interp, create_graph=True)
    gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake.detach()).mean() - critic(real).mean() + 10 * gp
    loss.backward()
    return loss.detach(), gp.detach()


def data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 4, generator=g), torch.randn(6, 8, generator=g), torch.rand(6, 1, generator=g)


def param_grads(m):
    return [p.grad for p in m.parameters()]


def wgan_gp_two_compiled():
    gen, critic = nets()
    gen2, critic2 = copy.deepcopy(gen), copy.deepcopy(critic)
    z, real, alpha = data()
    want = critic_step(gen, critic, z, real, alpha)
    cgen, ccritic = tracejit.compile(gen2, backend=BACKEND), tracejit.compile(critic2, backend=BACKEND)
    for step in range(2):  # the second call runs the cached graphs
        critic2.zero_grad(set_to_none=True)
        if step:
            critic.zero_grad(set_to_none=True)
            want = critic_step(gen, critic, z, real, alpha)
        try:
            got, err = critic_step(cgen, ccritic, z, real, alpha), ""
        except RuntimeError as e:
            got, err = None, str(e)
        check(not err and close(list(got), list(want)),
              f"WGAN-GP, call {step + 1}: the loss and the penalty as eager's [{err[:160]}]")
        check(not err and close(param_grads(critic2), param_grads(critic)),
              f"WGAN-GP, call {step + 1}: the critic's gradients (penalty included) as eager's")
    check(tracejit.counters()["graphs_compiled"] >= 2, "the generator and the critic were compiled")


def penalty_through_both():
    gen, critic = nets()
    gen2, critic2 = copy.deepcopy(gen), copy.deepcopy(critic)
    z = data()[0]

    def run(g, c):
        zz = z.clone().requires_grad_(True)
        out = c(g(zz))
        dz, = torch.autograd.grad(out.sum(), zz, create_graph=True)
        check(dz.requires_grad and dz.grad_fn is not None, "the gradient with respect to z has history")
        pen = (dz ** 2).sum()
        pen.backward()
        return pen.detach(), zz.grad

    want = run(gen, critic)
    got = run(tracejit.compile(gen2, backend=BACKEND), tracejit.compile(critic2, backend=BACKEND))
    check(close(list(got), list(want)), "a penalty through two compiled functions: its value and z's gradient")
    check(close(param_grads(gen2), param_grads(gen)) and close(param_grads(critic2), param_grads(critic)),
          "a penalty through two compiled functions: both modules' gradients as eager's")


def whole_step_compiled():
    gen, critic = nets()
    gen2, critic2 = copy.deepcopy(gen), copy.deepcopy(critic)
    z, real, alpha = data()
    want = critic_step(gen, critic, z, real, alpha)
    got = tracejit.compile(critic_step, backend=BACKEND)(gen2, critic2, z, real, alpha)
    check(close(list(got), list(want)) and close(param_grads(critic2), param_grads(critic)),
          "the WGAN-GP step compiled as a whole: as eager")


def third_order():
    def f(x):
        return (x.sin() * x.exp()).sum()

    x0 = torch.linspace(-1, 1, 5, dtype=torch.float64)
    cf = tracejit.compile(f, backend=BACKEND)
    results = []
    for fn in (f, cf):
        x = x0.clone().requires_grad_(True)
        g1, = torch.autograd.grad(fn(x), x, create_graph=True)
        g2, = torch.autograd.grad(g1.sum(), x, create_graph=True)
        g3, = torch.autograd.grad(g2.sum(), x)
        results.append([g1.detach(), g2.detach(), g3])
    check(close(results[1], results[0]), "first, second and third derivatives as eager's")


def refused():
    def noisy(x):
        return torch.nn.functional.dropout(x.tanh(), 0.5, training=True)

    x = torch.randn(4, 3).requires_grad_(True)
    err = ""
    try:
        g, = torch.autograd.grad(tracejit.compile(noisy, backend=BACKEND)(x).sum(), x, create_graph=True)
    except RuntimeError as e:
        err = str(e)
    if BACKEND == "eager":  # the forward's own ops: eager's history
        check(not err and g.requires_grad, f"a random op on the eager backend: a gradient with history [{err[:120]}]")
    else:
        check("create_graph=True" in err and "random numbers" in err and "tracejit.disable" in err,
              f"a random op: create_graph=True raises, saying why [{err[:200]}]")

    def f(x, w):
        return (x @ w).tanh()

    w = torch.randn(3, 3).requires_grad_(True)
    x = torch.randn(2, 3)
    errs = []
    for fn in (f, tracejit.compile(f, backend=BACKEND)):
        wl = w.detach().clone().requires_grad_(True)
        xl = x.clone()
        y = fn(xl, wl)
        with torch.no_grad():
            xl.add_(1)
        try:
            torch.autograd.grad(y.sum(), wl, create_graph=True)
            errs.append("")
        except RuntimeError as e:
            errs.append(str(e))
    check(all("modified by an inplace operation" in e for e in errs),
          f"an input written after the forward: eager's version error [{errs[1][:160]}]")


def main():
    wgan_gp_two_compiled()
    penalty_through_both()
    whole_step_compiled()
    third_order()
    refused()
    finish()


if __name__ == "__main__":
    main()
