"""Issue 43 item 1: sizes as numbers. A size (x.shape[0], len(x), x.size(0))
that meets a tensor or a float in arithmetic, float(), math.sqrt(),
math.log(), `/`, `**` or torch.full's fill value is a graph input computed
from the input sizes at each call, not a constant the guards pin: over 6
sizes each pattern compiles at most twice (the first call static, the
second dynamic) and its values equal eager's. Python semantics: `n / 2` is
a float, `//` floors, a division by a size that is 0 raises as in eager
(the fact `n != 0` is guarded). Where the trace needs the number's value
(a branch on `n / 2`) it is traced again with the size specialized, as
before. The `dynamic` log names each size used as a number and its line."""
import math
import os
import subprocess

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish

torch.manual_seed(0)
SIZES = (3, 5, 6, 7, 9, 12)


def compiled():
    return tracejit.counters()["graphs_compiled"]


# The op-by-op backends equal eager bit for bit; llvm's own kernels (sums,
# softmax) round differently from ATen's, with or without sizes as numbers.
EXACT = BACKEND in ("eager", "aot_eager")


def same(a, b):
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if EXACT or not a.is_floating_point():
            return torch.equal(a, b)
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    return type(a) is type(b) and a == b


def mean_by_hand(x):
    return x.sum() / x.shape[0]


def centered(x):
    return (x - x.sum(0) / x.size(0)).pow(2)


def times_len(x):
    return x * len(x)


def over_float(x):
    return x / float(x.shape[0])


def inv_sqrt(x):
    return x * (1.0 / math.sqrt(x.size(0)))


def softmax_scaled(x):
    return torch.softmax(x * x.shape[0] ** -0.5, -1)


def full_of_size(x):
    return x + torch.full((x.shape[0], 1), x.shape[0] * 1.0)


def floor_div(x):
    return x.sum(1) // x.shape[0], x % x.shape[1]


def ramp(x):
    return x + torch.arange(x.shape[0]).unsqueeze(1) / x.shape[0]


def half(x):
    return x * (x.shape[0] / 2), x.shape[0] / 2


def reversed_ops(x):
    n = x.shape[0]
    return n - x, n * x, 1.0 - x / n, (n + 1) / x.abs().add(1)


def numel_and_log(x):
    return x * math.log(x.numel()) + x.new_full((x.shape[0], x.shape[1]), x.shape[1] / x.shape[0])


def int_tensor(x):
    i = (x * 10).long()
    return i * x.shape[0], i / x.shape[0], i // x.shape[0]


def torch_div_forms(x):
    # the size reaches the Tensor overloads (aten::true_divide.Tensor,
    # div.Tensor_mode) as a wrapped number, as a Python int constant does
    i = (x * 10).long()
    n = x.shape[0]
    return (torch.true_divide(x, n), torch.true_divide(i, n), torch.div(i, n, rounding_mode="floor"),
            torch.div(x, n, rounding_mode="trunc"))


PATTERNS = (mean_by_hand, centered, times_len, over_float, inv_sqrt, softmax_scaled, full_of_size,
            floor_div, ramp, half, reversed_ops, numel_and_log, int_tensor, torch_div_forms)

for fn in PATTERNS:
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for n in SIZES:
        x = torch.randn(n, 4)
        got, want = cf(x), fn(x)
        if isinstance(want, tuple):
            ok = ok and len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
        else:
            ok = ok and same(got, want)
    check(ok, f"{fn.__name__}: {len(SIZES)} sizes equal eager")
    check(compiled() <= 2, f"{fn.__name__}: compiled at most twice for {len(SIZES)} sizes ({compiled()})")
    if BACKEND != "eager":
        # the first size static, the second's dynamic graph: the AOT size
        # template comes from that capture and probes (runtime/size_probes.h)
        c = tracejit.counters()
        check(c["aot_captures"] <= 2, f"{fn.__name__}: AOT captured at most twice for {len(SIZES)} sizes "
              f"({c['aot_captures']}, {c['aot_size_probes']} probes)")
        check_equal(c["aot_size_reuses"], len(SIZES) - 2,
                    f"{fn.__name__}: the other sizes compiled from the AOT size template")

# dynamic=True: one compile for every size, the size's value computed per call.
tracejit.reset()
cf = tracejit.compile(inv_sqrt, backend=BACKEND, dynamic=True)
ok = all(same(cf(x), inv_sqrt(x)) for x in (torch.randn(n, 3) for n in SIZES + (3, 12, 40)))
check(ok, "inv_sqrt, dynamic=True: sizes seen again and new ones equal eager")
check_equal(compiled(), 1, "inv_sqrt, dynamic=True: one compile")


# A size that differs from the other input's: each evaluated from its own input.
def two_inputs(x, y):
    return x / y.shape[0] + y.sum() * x.shape[0]


tracejit.reset()
cf = tracejit.compile(two_inputs, backend=BACKEND, dynamic=True)
pairs = [(torch.randn(n, 2), torch.randn(m)) for n, m in ((2, 3), (4, 4), (7, 2), (5, 9))]
ok = all(same(cf(x, y), two_inputs(x, y)) for x, y in pairs)
check(ok, "two inputs' sizes as numbers: 4 pairs equal eager")
check_equal(compiled(), 1, "two inputs' sizes as numbers, dynamic=True: one compile")


# A division by a size that can be 0: a tensor divided by it gives inf as in
# eager; a Python number divided by it is guarded by the fact `n - 2 != 0`,
# and at n == 2 raises ZeroDivisionError as eager does.
def per_row(x):
    return x.sum() / (x.shape[0] - 2), x * (1.0 / (x.shape[0] - 2))


tracejit.reset()
cf = tracejit.compile(per_row, backend=BACKEND, dynamic=True)
ok = all(same(cf(x)[0], per_row(x)[0]) and same(cf(x)[1], per_row(x)[1]) for x in (torch.randn(n, 2) for n in (3, 5, 8)))
check(ok, "division by n - 2: sizes 3, 5, 8 equal eager")
check_equal(compiled(), 1, "division by n - 2: one compile while n != 2")
try:
    cf(torch.randn(2, 2))
    check(False, "1.0 / (n - 2) at n == 2: nothing raised (eager raises ZeroDivisionError)")
except ZeroDivisionError:
    check(True, "1.0 / (n - 2) at n == 2 raises ZeroDivisionError, as eager")


def tensor_by_zero(x):
    return x.sum() / (x.shape[0] - 2)


tracejit.reset()
cf = tracejit.compile(tensor_by_zero, backend=BACKEND, dynamic=True)
ok = all(same(cf(x), tensor_by_zero(x)) for x in (torch.ones(n, 2) for n in (3, 2, 5)))
check(ok, "a tensor divided by n - 2: sizes 3, 2 (inf), 5 equal eager")
check_equal(compiled(), 1, "a tensor divided by n - 2: one compile (no fact needed)")


# The number's value needed (a branch on n / 2): traced again with the size specialized.
def branchy(x):
    h = x.shape[0] / 2
    if h > 3:
        return x * h
    return x - h


tracejit.reset()
cf = tracejit.compile(branchy, backend=BACKEND)
ok = all(same(cf(x), branchy(x)) for x in (torch.randn(n, 2) for n in SIZES))
check(ok, "a branch on n / 2: 6 sizes equal eager")
check_equal(tracejit.counters()["graph_breaks"], 0, "a branch on n / 2: no graph break (the size is specialized)")


# A Python number computed from a size is returned as the float CPython gives.
def ratio(x):
    return x.shape[0] / 3, float(x.shape[1]) * 0.1


tracejit.reset()
cf = tracejit.compile(ratio, backend=BACKEND, dynamic=True)
ok = all(same(cf(x), ratio(x)) for x in (torch.randn(n, m) for n, m in ((3, 7), (4, 9), (10, 3))))
check(ok, "n / 3 and float(m) * 0.1 returned: Python floats equal CPython's")

# explain says which sizes were specialized, and why (issue 43 item 4).
def loop_over(x):
    acc = x[0] * x.shape[1]
    for i in range(1, x.shape[0]):
        acc = acc + x[i]
    return acc


tracejit.reset()
ex = tracejit.explain(tracejit.compile(loop_over, backend=BACKEND, dynamic=True))(torch.randn(3, 4))
reasons = [str(r) for r in ex.specializations]
check(ex.specialization_count == 1 and "L['x'].size(0) == 3 specialized because passed to range" in reasons[0]
      and "size_numbers.py" in reasons[0] and "Specialized sizes: 1" in str(ex),
      f"explain counts the specialized size and says why: {reasons}")
check(ex.specialization_reasons == {"passed to range": 1} and "1 specialized because passed to range" in str(ex),
      f"explain counts the specializations per reason: {ex.specialization_reasons}")


# The dynamic log names the size used as a number and where it came from.
HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")
child = """
import torch, tracejit
def f(x):
    return x.sum() / x.shape[0]
cf = tracejit.compile(f, dynamic=True)
cf(torch.randn(5, 2))
"""
r = subprocess.run([LAUNCHER, "--log", "dynamic", "-c", child], capture_output=True, text=True, timeout=120)
log = r.stderr
check(r.returncode == 0 and "the size L['x'].size(0) (now 5) is used as a number" in log and ":4)" in log,
      f"the dynamic log names the size used as a number and its line: {log.strip()[-400:]!r}")

finish()
