"""`with` blocks in compiled functions (issue 18, item 19): grad-mode
context managers, CPU autocast and contextlib.nullcontext are traced (no graph break, no
recompilation on later calls), the graph runs each region under its grad
mode, a break inside a block and an exception leaving it restore the mode,
user context managers have their __enter__/__exit__ inlined, and no
freshly compiled entry has a guard that cannot pass again
(config.debug_check_guards)."""
import contextlib

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

tracejit.config.debug_check_guards = True
CALLS = 4


def describe(value):
    """What must match eager: values, requires_grad, dtypes, structure.
    Float values compare with tracejit.same's tolerance (a fusing backend's
    exp may differ from ATen's in the last bit), everything else exactly."""
    if isinstance(value, torch.Tensor):
        return ("tensor", Close(value.detach()), value.requires_grad, value.dtype)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [describe(v) for v in value])
    return value


class Close:
    def __init__(self, t):
        self.t = t

    def __eq__(self, other):
        return isinstance(other, Close) and tracejit.same(self.t, other.t, tol=1e-5)

    def __repr__(self):
        return repr(self.t.tolist())


def run(name, fn, *args, breaks=0):
    tracejit.reset()
    want = describe(fn(*args))
    compiled = tracejit.compile(fn, backend=BACKEND)
    outs = [describe(compiled(*args)) for _ in range(CALLS)]
    counters = tracejit.counters()
    check_equal(outs, [want] * CALLS, f"{name}: compiled == eager on every call")
    check_equal(counters["recompiles"], 0, f"{name}: no recompilation")
    check_equal(counters["guard_failures"], 0, f"{name}: no guard failure")
    if breaks is not None:
        check_equal(counters["graph_breaks"], breaks, f"{name}: graph breaks")
    check(torch.is_grad_enabled(), f"{name}: grad mode restored after the calls")
    return counters


def no_grad_region(x):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        w = z * x
    return y, z, w, torch.is_grad_enabled()


def enable_inside_no_grad(x):
    with torch.no_grad():
        a = x.sin()
        with torch.enable_grad():
            b = x.cos()
        c = x.exp()
    return a, b, c, x * 1.5


def set_grad_enabled_block(x, flag):
    with torch.set_grad_enabled(flag):
        a = x * 3
    return a, x * 4


def set_grad_enabled_call(x):
    torch.set_grad_enabled(False)
    a = x * 3
    torch.set_grad_enabled(True)
    return a, x * 4


def null_context(x):
    with contextlib.nullcontext(x) as y:
        z = y * 2
    with contextlib.nullcontext():
        w = z + 1
    return z, w


class Scale:
    """A user context manager: its methods are inlined."""

    def __init__(self, factor):
        self.factor = factor
        self.active = False

    def __enter__(self):
        self.active = True
        return self.factor

    def __exit__(self, *exc):
        self.active = False
        return False


def user_manager(x, manager):
    with manager as factor:
        y = x * factor
        inside = manager.active
    return y, inside, manager.active


def helper(x):
    with torch.no_grad():
        return x.relu()


def inlined_helper(x):
    return helper(x), x.relu()


def break_inside(x, log):
    y = x + 1
    with torch.no_grad():
        z = y * 2
        log.append(torch.is_grad_enabled())  # a list of an input: no break
        print("inside no_grad:", torch.is_grad_enabled())  # a graph break
        w = z * y
    return y, z, w, torch.is_grad_enabled()


def raise_inside(x):
    with torch.no_grad():
        y = x + 1
        raise ValueError(f"boom {y.requires_grad}")


def autocast_block(x):
    with torch.autocast("cpu"):
        y = x @ x
    return y


def autocast_regions(x, w):
    """The three cast policies, a disabled block inside, the state queries."""
    h = x * 2
    with torch.autocast("cpu"):
        a = h @ w                       # lower precision: bfloat16
        b = torch.nn.functional.linear(h, w, None) + 1
        c = torch.cat([a, h])           # widest type: float32
        d = a.prod()                    # float32 policy
        inside = (torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype())
        with torch.autocast("cpu", enabled=False):
            e = h @ w                   # not cast
            off = torch.is_autocast_cpu_enabled()
        f = torch.mm(h.double(), w.double())  # double is never cast
    return a, b, c, d, e, f, h @ w, inside, off, torch.is_autocast_cpu_enabled()


def cpu_amp_autocast(x, w):
    with torch.cpu.amp.autocast():
        y = torch.bmm(x.unsqueeze(0), w.unsqueeze(0))
    return y, y.float() + x


def autocast_break_inside(x, w, log):
    with torch.autocast("cpu"):
        a = x @ w
        log.append(torch.is_autocast_cpu_enabled())
        print("inside autocast:", torch.is_autocast_cpu_enabled())  # a graph break
        b = a @ w
    return a, b, x @ w, torch.is_autocast_cpu_enabled()


def autocast_raise_inside(x):
    with torch.autocast("cpu"):
        y = x @ x
        raise ValueError(f"boom {y.dtype}")


@torch.autocast("cpu", dtype=torch.bfloat16)
def autocast_decorated(x, w):
    return x @ w, torch.is_autocast_cpu_enabled()


@torch.autocast("cpu", enabled=False)
def autocast_off_decorated(x, w):
    return x @ w, torch.is_autocast_cpu_enabled()


def calls_decorated(x, w):
    a, on = autocast_decorated(x, w)
    with torch.autocast("cpu"):
        b, off = autocast_off_decorated(x, w)
    return a + 1, on, b, off, x @ w


GLOBAL_AUTOCAST = torch.autocast("cpu")


def global_autocast(x, w):
    with GLOBAL_AUTOCAST:
        y = x @ w
    return y, y.dtype


def cuda_autocast(x, w):
    # No CUDA in this build: eager's __init__ warns and disables it, and
    # CPU ops are not affected either way.
    with torch.autocast("cuda"):
        y = x @ w
    return y, torch.is_autocast_cpu_enabled()


def called_under_autocast(x, w):
    return x @ w, torch.is_autocast_cpu_enabled()


x = torch.randn(4, requires_grad=True)
run("no_grad", no_grad_region, x)
run("enable_grad inside no_grad", enable_inside_no_grad, x)
with torch.no_grad():
    tracejit.reset()
    compiled = tracejit.compile(enable_inside_no_grad, backend=BACKEND)
    got = [describe(v) for v in compiled(x)]
    want = [describe(v) for v in enable_inside_no_grad(x)]
    check_equal(got, want, "called under an outer no_grad: compiled == eager")
    check(not torch.is_grad_enabled(), "the caller's no_grad is kept")
run("set_grad_enabled(False) block", set_grad_enabled_block, x, False)
run("set_grad_enabled(True) block", set_grad_enabled_block, x, True)
run("set_grad_enabled as a call", set_grad_enabled_call, x)
run("nullcontext", null_context, x)
run("user context manager", user_manager, x, Scale(3.0))
run("no_grad in an inlined helper", inlined_helper, x)

# A break inside the block: the span and the resume function run under
# no_grad, the mode is restored after it, and later calls hit the cache.
tracejit.reset()
want = describe(break_inside(x, []))
compiled = tracejit.compile(break_inside, backend=BACKEND)
logs = [[] for _ in range(CALLS)]
outs = [describe(compiled(x, log)) for log in logs]
check_equal(outs, [want] * CALLS, "break inside no_grad: compiled == eager")
check_equal(logs, [[False]] * CALLS, "break inside no_grad: the region runs without grad")
check_equal(tracejit.counters()["recompiles"], 0, "break inside no_grad: no recompilation")
check(torch.is_grad_enabled(), "break inside no_grad: grad mode restored")

# An exception leaving the block restores the mode (CPython runs the
# block's __exit__ that the tracer left on the stack).
tracejit.reset()
compiled = tracejit.compile(raise_inside, backend=BACKEND)
for _ in range(2):
    try:
        compiled(x)
        check(False, "raise inside no_grad: nothing raised")
    except ValueError as e:
        check_equal(str(e), "boom False", "raise inside no_grad: the user's exception")
    check(torch.is_grad_enabled(), "raise inside no_grad: grad mode restored")

# Gradients through a function with a no_grad region match eager.
def loss_fn(w):
    with torch.no_grad():
        scale = w.detach().abs().sum()
    return (w * scale).sum()


tracejit.reset()
w1 = torch.randn(3, requires_grad=True)
w2 = w1.detach().clone().requires_grad_(True)
loss_fn(w1).backward()
tracejit.compile(loss_fn, backend=BACKEND)(w2).backward()
check(torch.allclose(w1.grad, w2.grad), "gradients through a no_grad region match eager")

# CPU autocast is traced: the graph has eager autocast's casts (values and
# dtypes equal eager's), no break, no recompilation; the real state is
# untouched after the calls.
def no_autocast_after(name):
    check(not torch.is_autocast_cpu_enabled(), f"{name}: autocast off after the calls")


m = torch.randn(3, 3)
wm = torch.randn(3, 3)
c = run("autocast", autocast_block, m, breaks=0)
check_equal(c["graphs_compiled"], 1, "autocast: one graph")
no_autocast_after("autocast")
run("autocast: three policies, a disabled block", autocast_regions, m, wm, breaks=0)
no_autocast_after("autocast regions")
run("torch.cpu.amp.autocast", cpu_amp_autocast, m, wm, breaks=0)
run("autocast with gradients", autocast_block, torch.randn(3, 3, requires_grad=True), breaks=0)

# The `@torch.autocast(...)` decorator's wrapper is inlined and its `with`
# on the decorator's instance (made outside the frame) traced: one graph.
c = run("@torch.autocast decorator", calls_decorated, m, wm, breaks=0)
check_equal(c["graphs_compiled"], 1, "@torch.autocast decorator: one graph")
no_autocast_after("@torch.autocast decorator")
run("a torch.autocast object made outside the frame", global_autocast, m, wm, breaks=0)
no_autocast_after("a global torch.autocast")
compiled = tracejit.compile(global_autocast, backend=BACKEND)
GLOBAL_AUTOCAST._enabled = False  # its attributes are guarded, not its identity
check_equal(describe(compiled(m, wm)), describe(global_autocast(m, wm)), "a global torch.autocast switched off")
check_equal(describe(compiled(m, wm))[1][1], torch.float32, "a global torch.autocast switched off: float32")
GLOBAL_AUTOCAST = torch.autocast("cpu")
check_equal(describe(compiled(m, wm))[1][1], torch.bfloat16, "a new global torch.autocast: bfloat16")
check_equal(tracejit.counters()["recompiles"], 1, "a global torch.autocast: one recompilation for the switch")
if not torch.cuda.is_available():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = run("torch.autocast('cuda') without CUDA", cuda_autocast, m, wm, breaks=0)
    check_equal(c["graphs_compiled"], 1, "torch.autocast('cuda') without CUDA: one graph")

# A break inside the block: the resume function runs in autocast (the block
# is entered for real after the graph), left after the block.
tracejit.reset()
want = describe(autocast_break_inside(m, wm, []))
compiled = tracejit.compile(autocast_break_inside, backend=BACKEND)
logs = [[] for _ in range(CALLS)]
outs = [describe(compiled(m, wm, log)) for log in logs]
check_equal(outs, [want] * CALLS, "break inside autocast: compiled == eager")
check_equal(logs, [[True]] * CALLS, "break inside autocast: the region runs in autocast")
check_equal(tracejit.counters()["recompiles"], 0, "break inside autocast: no recompilation")
no_autocast_after("break inside autocast")

# An exception leaving the block restores the state.
tracejit.reset()
compiled = tracejit.compile(autocast_raise_inside, backend=BACKEND)
for _ in range(2):
    try:
        compiled(m)
        check(False, "raise inside autocast: nothing raised")
    except ValueError as e:
        check_equal(str(e), "boom torch.bfloat16", "raise inside autocast: the user's exception")
    no_autocast_after("raise inside autocast")

# The autocast state at entry is guarded: a call under the caller's
# autocast does not reuse the graph made without it (and vice versa).
tracejit.reset()
compiled = tracejit.compile(called_under_autocast, backend=BACKEND)
got = [describe(compiled(m, wm))]
want = [describe(called_under_autocast(m, wm))]
with torch.autocast("cpu"):
    got.append(describe(compiled(m, wm)))
    want.append(describe(called_under_autocast(m, wm)))
got.append(describe(compiled(m, wm)))
want.append(describe(called_under_autocast(m, wm)))
check_equal(got, want, "called with and without the caller's autocast: compiled == eager")
check_equal(want[1][1][0][3], torch.bfloat16, "the caller's autocast applies")
check_equal(tracejit.counters()["recompiles"], 1, "the caller's autocast: one recompilation (AUTOCAST_CPU guard)")
no_autocast_after("called under autocast")

finish()
