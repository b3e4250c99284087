"""Internal errors (bugs of tracejit's own: a C++ exception that is not
LibTorch's) are never shown as the reason something is not supported:
each is counted in counters()["internal_errors"], logged on stderr as a
"[tracejit:error] internal error in tracejit (please report): ..." line
whatever --log says, and the graph still runs correctly (op by op).
config.debug_inject_bug="relu_internal_error" makes the llvm backend throw
one. Ocean-physics style kernels (in-place updates of slices of several
inputs after data-dependent breaks) once showed `unordered_map::at` as a
fallback reason: they must run with no internal error."""
import os
import subprocess
import warnings

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")


def fn(x):
    return (x * 2 + 1).relu() - 3


x = torch.randn(4, 5)

# An injected internal error in the llvm backend (it is the one that can inject it).
tracejit.reset()
tracejit.config.debug_inject_bug = "relu_internal_error"
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tracejit.compile(fn, backend="llvm")(x)
finally:
    tracejit.config.debug_inject_bug = None
counters = tracejit.counters()
check(torch.allclose(got, fn(x)), "after an internal error the graph still runs correctly (op by op)")
check_equal(counters["internal_errors"], 1, "the internal error is counted")
check_equal(counters["backend_fallbacks"], 1, "... and the graph ran op by op")
messages = [str(w.message) for w in caught]
check(any(m.count("internal error in tracejit (please report): ") == 1 and "relu_internal_error" in m for m in messages),
      f"the warning words it as an internal error ({messages})")
tracejit.reset()
check_equal(tracejit.counters()["internal_errors"], 0, "reset() zeroes the counter")

# Without suppress_errors, BackendCompilerFailed says it is an internal error.
tracejit.config.debug_inject_bug = "relu_internal_error"
tracejit.config.suppress_errors = False
try:
    e = check_raises(tracejit.BackendCompilerFailed, lambda: tracejit.compile(fn, backend="llvm")(x),
                     "suppress_errors=False: an internal error raises BackendCompilerFailed")
    check(e is not None and "internal error in tracejit (please report)" in str(e), "... worded as an internal error")
finally:
    tracejit.config.debug_inject_bug = None
    tracejit.config.suppress_errors = True

# The error line on stderr, with no log topic switched on.
program = ("import warnings, torch, tracejit\n"
           "warnings.simplefilter('ignore')\n"
           "tracejit.config.debug_inject_bug = 'relu_internal_error'\n"
           "print(tracejit.compile(lambda t: t.relu() + 1, backend='llvm')(torch.ones(3)).tolist())\n")
env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRACEJIT_LOGS")}
r = subprocess.run([LAUNCHER, "-c", program], capture_output=True, text=True, timeout=120, env=env)
check(r.returncode == 0 and r.stdout.strip() == "[2.0, 2.0, 2.0]", f"the program runs correctly ({r.stdout!r})")
error_lines = [line for line in r.stderr.splitlines() if line.startswith("[tracejit:error]")]
check(len(error_lines) == 1 and "internal error in tracejit (please report)" in error_lines[0]
      and "please report it" in error_lines[0], f"one error line on stderr asks for a report ({r.stderr[-800:]!r})")


# Ocean-physics style kernels: in-place updates of slices of several inputs
# after a data-dependent break (.item(), nonzero, a boolean mask).
def shallow_water(u, v, h, dt):
    eta = h.mean().item()
    u[1:-1, :] += dt * (h[2:, :] - h[:-2, :]) * eta
    v[:, 1:-1] += dt * (h[:, 2:] - h[:, :-2])
    h[1:-1, 1:-1] -= dt * (u[2:, 1:-1] - u[:-2, 1:-1] + v[1:-1, 2:] - v[1:-1, :-2])
    h[h > eta + 1] = eta
    return u.sum() + v.sum() + h.sum()


def slices(a, b, c):
    i = int(a.sum().item() > 0)
    a[1:3] += 1
    b[:, 0] *= 2
    c[i:i + 2] = a[:2]
    n = (b > 0).nonzero().shape[0]
    c[:, 1:3] -= n
    a[-1] = b[0] + c[1]
    return a, b, c


for name, f, make in [
    ("shallow_water", shallow_water, lambda g: (torch.randn(8, 9, generator=g), torch.randn(8, 9, generator=g),
                                                torch.randn(8, 9, generator=g), 0.1)),
    ("slices", slices, lambda g: tuple(torch.randn(5, 4, generator=g) for _ in range(3))),
]:
    tracejit.reset()
    cf = tracejit.compile(f, backend=BACKEND)
    ok = True
    for seed in range(4):
        want_in = make(torch.Generator().manual_seed(seed))
        got_in = tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in want_in)
        want = f(*want_in)
        got = cf(*got_in)
        ok &= all(torch.allclose(a, b, atol=1e-5) for a, b in zip(want_in, got_in) if isinstance(a, torch.Tensor))
        ok &= all(torch.allclose(a, b, atol=1e-4) for a, b in
                  zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)))
    check(ok, f"{name}: outputs and inputs written in place match eager")
    check_equal(tracejit.counters()["internal_errors"], 0, f"{name}: no internal error")
    ex = tracejit.explain(f)(*make(torch.Generator().manual_seed(0)))
    reasons = [r.reason for r in ex.break_reasons]
    check(not any("unordered_map" in r or "internal error" in r for r in reasons), f"{name}: break reasons {reasons}")

# An op autograd has no derivative for (floor_divide of an input that requires
# grad: eager's backward would raise) is LibTorch's refusal, not a bug of ours.
def floor_div_of_grad_input(x1, x2):
    return (x2 // x1) * x1


tracejit.reset()
x1, x2 = torch.rand(3, requires_grad=True) + 1, torch.rand(3) * 5
check(torch.equal(tracejit.compile(floor_div_of_grad_input, backend=BACKEND)(x1, x2), floor_div_of_grad_input(x1, x2)),
      "floor_divide of an input that requires grad: eager's values")
check_equal(tracejit.counters()["internal_errors"], 0, "floor_divide without a derivative: no internal error")

# A reshape to sizes that do not hold the elements, caught (fuzz seed
# 9802777): ATen's infer_size throws a plain std::runtime_error, eager's
# RuntimeError, not a bug of ours.
def reshape_caught(x):
    v = x * 2
    try:
        r = v.reshape(-1, 7)
    except RuntimeError as e:
        print("caught", type(e).__name__)
        r = v.round()
    return r


tracejit.reset()
x = torch.randn(2, 1)
check(torch.equal(tracejit.compile(reshape_caught, backend=BACKEND)(x), reshape_caught(x)),
      "a reshape eager refuses, caught: eager's values")
check_equal(tracejit.counters()["internal_errors"], 0, "a reshape to sizes that do not hold the elements: no internal error")

# An internal error while a frame is compiled (config.debug_inject_bug =
# "frame_internal_error"): the frame runs uncompiled with eager's result,
# the error is counted, and explain lists the frame in skipped_frames as an
# internal error, never with the exception's text as its reason.
tracejit.reset()
tracejit.config.debug_inject_bug = "frame_internal_error"
try:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = tracejit.compile(fn, backend=BACKEND)(x)
        ex = tracejit.explain(fn)(x)
finally:
    tracejit.config.debug_inject_bug = None
check(torch.allclose(got, fn(x)), "an internal error while compiling a frame: eager's result")
check(tracejit.counters()["internal_errors"] >= 1, "an internal error while compiling a frame is counted")
skipped = [r.reason for r in ex.skipped_frames]
check(any("fn ran uncompiled: an internal error of tracejit" in r for r in skipped),
      f"explain lists the frame an internal error left uncompiled ({skipped})")
shown = skipped + [r.reason for r in ex.break_reasons]
check(not any("unordered_map" in r for r in shown), f"the exception's text is not shown as a reason ({shown})")

finish()
