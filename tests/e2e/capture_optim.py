"""Issue 11: torch.optim optimizers' step() and zero_grad() under
tracejit.compile: one graph per step (the parameter and state updates are
input mutations, new state tensors and the state dict entries side
effects replayed after the graph), parameters and state equal to eager
over 4 steps (bit for bit on the op-by-op backends): SGD, Adam, AdamW,
Adagrad, Adamax, NAdam, RAdam, ASGD, RMSprop, Adadelta, Rprop; RAdam and
ASGD also over 10 steps, through both sides of their branches."""
import copy

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
base = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
data = [torch.randn(4, 6) for _ in range(4)]
# The llvm backend fuses the update into kernels of its own (float math in
# another order): a tight tolerance there, exact equality elsewhere.
EXACT = BACKEND in ("eager", "aot_eager")


def close(a, b):
    return torch.equal(a, b) if EXACT else torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def run(make_opt, compiled, batches=None):
    model = copy.deepcopy(base)
    opt = make_opt(model.parameters())

    def step():
        opt.step()

    def zero():
        opt.zero_grad()

    step_fn = tracejit.compile(step, backend=BACKEND) if compiled else step
    zero_fn = tracejit.compile(zero, backend=BACKEND) if compiled else zero
    for x in batches or data:
        zero_fn()
        model(x).pow(2).sum().backward()
        step_fn()
    return model, opt


OPTIMIZERS = {
    "SGD momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "SGD nesterov, weight decay": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "Adam amsgrad, weight decay": lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.1),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
    "Adamax": lambda p: torch.optim.Adamax(p, lr=0.01),
    "NAdam": lambda p: torch.optim.NAdam(p, lr=0.01),
    # RAdam and ASGD branch on numbers read from tensors: traced through
    # tracejit/_polyfills.py. RMSprop, Adadelta and Rprop count steps in a
    # Python int: an automatic dynamic int (dynamic_ints.py), whose entry serves
# from the fourth step on (the first makes the state, the second sees the
# int for the first time, the third traces it as an input).
    "RAdam": lambda p: torch.optim.RAdam(p, lr=0.01),
    "ASGD": lambda p: torch.optim.ASGD(p, lr=0.01),
    "ASGD weight decay": lambda p: torch.optim.ASGD(p, lr=0.01, weight_decay=0.1, lambd=0.01),
    "RMSprop centered, momentum": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
    "Adadelta": lambda p: torch.optim.Adadelta(p),
    "Rprop": lambda p: torch.optim.Rprop(p, lr=0.01),
}
# Long enough for both sides of the polyfills' selections: RAdam's
# rho_t > 5 from step 7 with beta2 = 0.8 (and 2 < rho_t < 4, where the
# untaken side's square root is of a negative number, before); ASGD's
# mu != 1 and 1 / max(1, step - t0) past t0 = 3.
LONG = {
    "RAdam beta2=0.8": lambda p: torch.optim.RAdam(p, lr=0.01, betas=(0.9, 0.8)),
    "ASGD t0=3": lambda p: torch.optim.ASGD(p, lr=0.01, t0=3),
}
long_data = [torch.randn(4, 6) for _ in range(10)]


def run_both(name, make, batches=None):
    """4 steps (or one per batch) eagerly and compiled (after a reset); the parameters must agree."""
    tracejit.reset()
    want_model, want_opt = run(make, compiled=False, batches=batches)
    got_model, got_opt = run(make, compiled=True, batches=batches)
    for (pn, a), b in zip(want_model.named_parameters(), got_model.parameters()):
        check(close(a, b), f"{name}: parameter {pn} equals eager after {len(batches or data)} steps")
        # written in place under no_grad, as eager writes them (AOT compiles
        # the no-grad step for inference and writes the parameters back)
        check(b.is_leaf and b.requires_grad and b.grad_fn is None, f"{name}: parameter {pn} is still a leaf")
        check_equal(b._version, a._version, f"{name}: parameter {pn}'s version counter")
    return want_opt, got_opt


for name, make in OPTIMIZERS.items():
    want_opt, got_opt = run_both(name, make)
    want_state = list(want_opt.state.values())
    got_state = list(got_opt.state.values())
    check_equal(len(got_state), len(want_state), f"{name}: one state entry per parameter")
    for ws, gs in zip(want_state, got_state):
        check_equal(sorted(gs), sorted(ws), f"{name}: state keys")
        for k in ws:
            a, b = ws[k], gs[k]
            ok = close(a, b) if isinstance(a, torch.Tensor) else a == b
            check(ok and type(a) is type(b), f"{name}: state '{k}' equals eager")
    counters = tracejit.counters()
    check_equal(counters["graph_breaks"], 0, f"{name}: no graph break over 4 steps and zero_grad()")
    check(counters["graphs_compiled"] >= 1 and counters["cache_hits"] >= 1,
          f"{name}: step() and zero_grad() ran compiled ({counters['graphs_compiled']} graphs, {counters['cache_hits']} hits)")
    # the whole step runs under no_grad: compiled by the backend (AOT for
    # inference), not the captured graph op by op
    check_equal(counters["backend_fallbacks"], 0, f"{name}: no graph fell back to running op by op")

    # One graph per step, traced on the state the first step leaves.
    model = copy.deepcopy(base)
    opt = make(model.parameters())
    model(data[0]).sum().backward()
    ex = tracejit.explain(lambda: opt.step())()
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{name}: first step is one graph")
    ex = tracejit.explain(lambda: opt.step())()
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{name}: a later step is one graph")
    ex = tracejit.explain(lambda: opt.zero_grad())()
    check_equal((ex.graph_count, ex.graph_break_count), (1, 0), f"{name}: zero_grad is one graph")

# The ASGD polyfill takes float32/float64 parameters; others run the original
# (float16/bfloat16 add_ reads its alpha in float, a 0-d tensor of theirs
# would round it first).
for dtype in (torch.bfloat16, torch.float16):
    results = []
    for compiled in (False, True):
        tracejit.reset()
        torch.manual_seed(3)
        p = torch.randn(8, dtype=dtype, requires_grad=True)
        asgd = torch.optim.ASGD([p], lr=0.05)
        step_fn = tracejit.compile(asgd.step, backend=BACKEND) if compiled else asgd.step
        for i in range(3):
            p.grad = torch.full_like(p, 0.5 + i)
            step_fn()
        results.append(p.detach().clone())
    check(torch.equal(results[0], results[1]), f"ASGD on {dtype} parameters equals eager")

for name, make in LONG.items():
    run_both(name, make, long_data)
    counters = tracejit.counters()
    check_equal(counters["graph_breaks"], 0, f"{name}: no graph break over 10 steps")

finish()
