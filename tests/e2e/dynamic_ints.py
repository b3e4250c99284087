"""Issue 11 (optimizers whose step count is a Python int) and issue 15
(automatic dynamic): an int read from an input that changes value between
calls is traced again once as a graph input (a 0-d int64 tensor made at
each call) instead of a guarded constant, so a counter does not retrace
on every call. Where the trace needs the int's value (range(), a branch,
a shape) it stays a constant, with one trace per value as before. Values
equal eager's; under dynamic=False every value is a constant."""
import copy

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(4, 3)


def traces_after(fn, calls):
    """Runs `calls` (each a no-argument callable) and returns how many frames were traced."""
    before = tracejit.counters()["frames_traced"]
    for c in calls:
        c()
    return tracejit.counters()["frames_traced"] - before


# --- a counter in a dict and an attribute: stored back after the graph
tracejit.reset()
state = {"step": 0}


class Counter:
    def __init__(self):
        self.n = 0


counter = Counter()


def count(t):
    state["step"] += 1
    counter.n = counter.n + 2
    return t * 2, state["step"] * 3


compiled = tracejit.compile(count, backend=BACKEND)
got = []
for _ in range(6):
    out, k = compiled(x)
    got.append(k)
check_equal(got, [3, 6, 9, 12, 15, 18], "a dict counter's value returned after += 1 (int arithmetic in the graph)")
check(all(type(k) is int for k in got), "the returned number is a Python int")
check_equal((state["step"], counter.n), (6, 12), "the dict entry and the attribute are stored back each call")
check_equal(tracejit.counters()["frames_traced"], 2, "two traces for six calls: the constant, then the int as an input")

# --- an int argument in tensor arithmetic, Python's // and % on negatives
tracejit.reset()


def scale(t, n):
    return t * n + (n // 3) - n % 4, n * 2 - 1


compiled = tracejit.compile(scale, backend=BACKEND)
ok = True
for n in range(-5, 6):
    got_t, got_n = compiled(x, n)
    want_t, want_n = scale(x, n)
    ok = ok and torch.equal(got_t, want_t) and got_n == want_n and type(got_n) is int
check(ok, "t * n + n // 3 - n % 4 equals eager for n in -5..5 (floor division and modulo as Python's)")
check_equal(tracejit.counters()["frames_traced"], 2, "eleven values, two traces")
check(tracejit.counters()["graph_breaks"] == 0, "no graph break")

# --- an int dtype tensor meets the int as Python's wrapped number: no promotion
tracejit.reset()
ints = torch.arange(6, dtype=torch.int32)
add = tracejit.compile(lambda t, n: t + n, backend=BACKEND)
results = [add(ints, n) for n in (1, 2, 3)]
check(all(r.dtype == torch.int32 for r in results), "int32 tensor + int stays int32")
check(all(torch.equal(r, ints + n) for r, n in zip(results, (1, 2, 3))), "int32 tensor + int values")

# --- where the value matters (range, a branch), the int stays a constant
tracejit.reset()


def repeat(t, n):
    for _ in range(n):
        t = t + 1
    return t


compiled = tracejit.compile(repeat, backend=BACKEND)
check(all(torch.equal(compiled(x, n), repeat(x, n)) for n in range(1, 6)), "range(n): values equal eager")
# Call 2 traces n as an input, which stops at range(), then again as a
# constant (kept, within the same compile); n stays a constant after.
check_equal(tracejit.counters()["frames_traced"], 5, "range(n) keeps n a constant: a trace per value")
check(tracejit.counters()["graph_breaks"] == 0, "range(n): no graph break kept")


def branch(t, n):
    if n > 2:
        return t + 1
    return t - 1


tracejit.reset()
compiled = tracejit.compile(branch, backend=BACKEND)
check(all(torch.equal(compiled(x, n), branch(x, n)) for n in range(6)), "a branch on n: values equal eager")
check(tracejit.counters()["graph_breaks"] == 0, "a branch on n: no graph break kept")

# --- large ints and bools stay constants (the DYNAMIC_INT guard's range)
tracejit.reset()
big = tracejit.compile(lambda t, n: t * 0 + n, backend=BACKEND)
vals = [2**40, 2**40 + 1, 2**40 + 2]
check(all(torch.equal(big(x.double(), v), x.double() * 0 + v) for v in vals), "ints beyond 2**31 equal eager")
check_equal(tracejit.counters()["frames_traced"], 3, "ints beyond 2**31 are constants: a trace per value")
tracejit.reset()
small = tracejit.compile(lambda t, n: t + n, backend=BACKEND)
check(all(torch.equal(small(x, v), x + v) for v in (1, 2, 2**31 + 5, 3)), "an int leaving the range is traced anew")
check(torch.equal(small(x, True), x + True) and torch.equal(small(x, False), x + False), "bools are constants")

# --- dynamic=False: every value is a constant
tracejit.reset()
fixed = tracejit.compile(scale, backend=BACKEND, dynamic=False)
for n in range(4):
    fixed(x, n)
check_equal(tracejit.counters()["frames_traced"], 4, "dynamic=False: a trace per value")

# --- optimizers whose state['step'] is an int: one reused graph after the first steps
torch.manual_seed(0)
base = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
data = [torch.randn(4, 6) for _ in range(6)]
EXACT = BACKEND in ("eager", "aot_eager")
OPTIMIZERS = {
    "RMSprop centered, momentum": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
    "Adadelta": lambda p: torch.optim.Adadelta(p),
    "Rprop": lambda p: torch.optim.Rprop(p, lr=0.01),
}


def train(make, compiled):
    model = copy.deepcopy(base)
    opt = make(model.parameters())

    def step():
        opt.step()

    step_fn = tracejit.compile(step, backend=BACKEND) if compiled else step
    for d in data:
        opt.zero_grad()
        model(d).pow(2).sum().backward()
        step_fn()
    return model, opt


for name, make in OPTIMIZERS.items():
    tracejit.reset()
    want_model, want_opt = train(make, False)
    tracejit.reset()
    got_model, got_opt = train(make, True)
    same = all((torch.equal(a, b) if EXACT else torch.allclose(a, b, rtol=1e-5, atol=1e-6))
               for a, b in zip(want_model.parameters(), got_model.parameters()))
    check(same, f"{name}: parameters equal eager after 6 steps")
    check_equal([s["step"] for s in got_opt.state.values()], [6] * 4, f"{name}: state['step'] counts the steps")
    c = tracejit.counters()
    # step 1 makes the state, step 2 sees step == 1, step 3 traces the
    # ints as inputs; steps 4-6 reuse it.
    check_equal((c["frames_traced"], c["graph_breaks"]), (3, 0), f"{name}: 3 traces for 6 steps, no break")

finish()
