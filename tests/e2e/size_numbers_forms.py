"""Issue 43 item 1, the forms size_numbers.py leaves out: math.floor,
math.ceil, math.trunc and int() of a true division of sizes
(`math.ceil(n / 2)`) are sizes again (`-((-n) // 2)`: exact while
|n| < 2**53, a guarded fact), and int powers (`n ** 3`, `2 ** n`) are size
nodes (sym_pow) with the facts that keep them within int64; `n ** -2` is
Python's float(n) ** -2.0. round() of a true division is rounded half to
even as CPython's float (`round(n / 2)`: 2 for n = 5, 4 for n = 7 and 9), and
a product or quotient of a size and a float constant that is exact in
doubles (`math.ceil(n * 0.5)`, `math.floor(0.75 * n)`, `int(n / 2.0)`,
`round(n * 1.5)`, `math.floor(12.0 / n)`) is such a division too. `n ** m`
of two sizes is a size node with the facts m >= 0 and "within int64". Over 6 sizes each pattern compiles at most twice,
values equal eager; past the int64 bound (`n ** 11` at n = 60) the fact
fails and the frame is traced again with the size specialized, so the value
is CPython's big int's."""
import math

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish, tensors_same

torch.manual_seed(0)
SIZES = (3, 5, 6, 7, 9, 12)


def compiled():
    return tracejit.counters()["graphs_compiled"]


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and tensors_same(a, b)
    return type(a) is type(b) and a == b


def ceil_half(x):
    n = x.shape[0]
    return x * math.ceil(n / 2), x.new_zeros(math.floor(n / 3), 2), x[: math.ceil(n / 2)]


def other_divisions(x):
    n = x.shape[0]
    return (torch.arange(math.ceil(100 / n)), x[: math.floor((n + 1) / 4)] * 2, x * int(n / 4),
            x * math.trunc(-n / 3), x.new_ones(math.ceil(n / x.shape[1])))


def int_powers(x):
    n = x.shape[0]
    return x * n ** 3, x.sum() * 2 ** n, x.new_ones(n ** 2), x * (n ** 0), torch.arange(2 ** (n % 4))


def negative_power(x):
    n = x.shape[0]
    return x * n ** -2, x / (n ** -1)


def round_half(x):
    n = x.shape[0]
    return x[: round(n / 2)], x.new_zeros(round(n / 4), 2), x.new_ones(round((n + 1) / 3)), x * round(-n / 2)


def float_products(x):
    n = x.shape[0]
    return (x[: math.ceil(n * 0.5)], x.new_zeros(math.floor(0.75 * n)), x.new_ones(int(n / 2.0)),
            torch.arange(round(n * 1.5)), x[: math.floor(12.0 / n)], x.new_zeros(math.ceil(-n * 0.25) + n, 1))


PATTERNS = (ceil_half, other_divisions, int_powers, negative_power, round_half, float_products)

for fn in PATTERNS:
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = True
    for n in SIZES:
        x = torch.randn(n, 4)
        got, want = cf(x), fn(x)
        ok = ok and len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    check(ok, f"{fn.__name__}: {len(SIZES)} sizes equal eager")
    check(compiled() <= 2, f"{fn.__name__}: compiled at most twice for {len(SIZES)} sizes ({compiled()})")
    check_equal(tracejit.counters()["graph_breaks"], 0, f"{fn.__name__}: no graph break")


# The ints themselves, returned: Python's values and types (returned ints are specialized, so no count).
def ints(x):
    n = x.shape[0]
    return (math.ceil(n / 2), math.floor(n / 2), int(n / 3), math.trunc(-n / 3), math.ceil(-n / 4), n ** 3, 2 ** n,
            n ** -2, n ** 0)


tracejit.reset()
cf = tracejit.compile(ints, backend=BACKEND, dynamic=True)
ok = all(same(g, w) for n in SIZES for g, w in zip(cf(torch.randn(n, 1)), ints(torch.randn(n, 1))))
check(ok, "ceil/floor/int/trunc of n / k, n ** 3, 2 ** n, n ** -2, n ** 0 returned: CPython's values and types")


# round() and float products returned: CPython's values and types, ties to even both ways.
def rounded(x):
    n = x.shape[0]
    return (round(n / 2), round(-n / 2), round(n / 4), round(n * 0.5), round(n * 1.5), math.ceil(n * 0.5),
            math.floor(-0.75 * n), int(n / 2.0), math.floor(12.0 / n), math.ceil(3.0 / (n - 2)), round(7 / n))


tracejit.reset()
cf = tracejit.compile(rounded, backend=BACKEND, dynamic=True)
ok = all(same(g, w) for n in SIZES + (1, 4, 10, 11) for g, w in zip(cf(torch.randn(n, 1)), rounded(torch.randn(n, 1))))
check(ok, "round(n / 2), round(-n / 2), round(n * 1.5), math.ceil(n * 0.5), math.floor(12.0 / n) ... returned: "
          "CPython's values and types")


# A float constant whose product with a size rounds (0.1, 1/3): no exact
# division of ints, so the size is specialized as before; values stay eager's.
def inexact_products(x):
    n = x.shape[0]
    return x[: math.floor(n * 0.1) + 1], x.new_zeros(round(n * (1 / 3)))


tracejit.reset()
cf = tracejit.compile(inexact_products, backend=BACKEND)
ok = all(same(g, w) for x in (torch.randn(n, 2) for n in SIZES + (10, 30)) for g, w in zip(cf(x), inexact_products(x)))
check(ok, "math.floor(n * 0.1), round(n * (1 / 3)): equal eager (specialized per size)")


# n ** m of two sizes: one size node, the fact that it stays within int64.
def power_of_sizes(x):
    n, m = x.shape
    return x.new_zeros(n ** m % 7 + 1, 2), x * (m ** n % 5), torch.arange(n ** m % 11), x.sum() * float(n ** m)


PAIRS = ((3, 2), (5, 3), (6, 2), (7, 4), (9, 3), (12, 5))
tracejit.reset()
cf = tracejit.compile(power_of_sizes, backend=BACKEND)
ok = all(same(g, w) for x in (torch.randn(n, m) for n, m in PAIRS) for g, w in zip(cf(x), power_of_sizes(x)))
check(ok, f"n ** m of two sizes: {len(PAIRS)} shapes equal eager")
check(compiled() <= 2, f"n ** m of two sizes: compiled at most twice for {len(PAIRS)} shapes ({compiled()})")
check_equal(tracejit.counters()["graph_breaks"], 0, "n ** m of two sizes: no graph break")
# Beyond int64 (40 ** 12, 2 ** 70): the fact fails, traced again with the sizes specialized: CPython's big int.
ok = all(same(g, w) for x in (torch.randn(n, m) for n, m in ((40, 12), (2, 70), (4, 3), (70, 2)))
         for g, w in zip(cf(x), power_of_sizes(x)))
check(ok, "n ** m beyond int64 (40 ** 12, 2 ** 70) and back: equal eager")


# Past int64: the fact n <= 53 (53 ** 11 < 2**63 < 54 ** 11) fails, the
# frame is traced again with the size specialized: CPython's big int.
def big_power(x):
    return x * float(x.shape[0] ** 11), x * float(3 ** x.shape[0])


tracejit.reset()
cf = tracejit.compile(big_power, backend=BACKEND)
ok = True
for n in SIZES + (53, 54, 60, 45):
    x = torch.randn(n, 2)
    ok = ok and all(same(g, w) for g, w in zip(cf(x), big_power(x)))
check(ok, "n ** 11 and 3 ** n at n = 53, 54, 60 (beyond int64) and back: equal eager")
check(compiled() <= 6, f"n ** 11, 3 ** n: at most twice for 6 sizes, then per size past int64 ({compiled()})")


# A division by a size that is 0 raises as in eager: the fact n - 3 != 0 guards math.ceil(1 / (n - 3)).
def by_n_minus_3(x):
    return x * math.ceil(7 / (x.shape[0] - 3))


tracejit.reset()
cf = tracejit.compile(by_n_minus_3, backend=BACKEND, dynamic=True)
ok = all(same(cf(x), by_n_minus_3(x)) for x in (torch.randn(n, 2) for n in (4, 5, 9, 2)))
check(ok, "math.ceil(7 / (n - 3)) at n = 4, 5, 9, 2 equal eager")
check_equal(compiled(), 1, "math.ceil(7 / (n - 3)): one compile while n != 3")
try:
    cf(torch.randn(3, 2))
    check(False, "math.ceil(7 / (n - 3)) at n == 3: nothing raised (eager raises ZeroDivisionError)")
except ZeroDivisionError:
    check(True, "math.ceil(7 / (n - 3)) at n == 3 raises ZeroDivisionError, as eager")


# float(n * 10**20): an int beyond int64 (Python promotes where int64 would
# wrap) going straight to float() is float(n) * 1e20 (10**20 and 2**70 are
# doubles; the fact |n| < 2**53 keeps float(n) exact), the one correctly
# rounded value CPython's float() of the big int gives: one graph for
# every size. 10**23 is no double, and a product not passed to float() is
# an int: specialized per size, values still CPython's.
def float_of_huge(x):
    n = x.shape[0]
    return x * float(n * 10**20), float(10**20 * n) / 3, x.sum() * float(n * 2**70), float(-n * 10**20)


def huge_not_exact(x):
    n = x.shape[0]
    return x * float(n * 10**23), n * 10**20, float(n * 10**20 + 1)


for fn in (float_of_huge, huge_not_exact):
    tracejit.reset()
    cf = tracejit.compile(fn, backend=BACKEND)
    ok = all(same(g, w) for x in (torch.randn(n, 2) for n in SIZES) for g, w in zip(cf(x), fn(x)))
    check(ok, f"{fn.__name__}: {len(SIZES)} sizes equal CPython's values and types")
    check_equal(tracejit.counters()["graph_breaks"], 0, f"{fn.__name__}: no graph break")
check(compiled() > 2, f"huge_not_exact: specialized per size ({compiled()} compiles)")
tracejit.reset()
cf = tracejit.compile(float_of_huge, backend=BACKEND)
for n in SIZES:
    cf(torch.randn(n, 2))
check(compiled() <= 2, f"float(n * 10**20): compiled at most twice for {len(SIZES)} sizes ({compiled()})")


# Python's int semantics on sizes: // and % floor toward -inf (negative
# operands either side), true division gives a float, products past int64
# promote to big ints (the fact fails: specialized), returned as CPython's.
def int_corners(x):
    n = x.shape[0]
    return ((-n) // 4, n // -4, (-n) % 3, n % -3, -n / 4, n / 2, n * 2**62, (n - 7) // 2, divmod(-n, 5),
            x.sum() // -n, (x * 10).long() // -n)


tracejit.reset()
cf = tracejit.compile(int_corners, backend=BACKEND)
ok = all(same(g, w) for x in (torch.randn(n, 2) for n in SIZES) for g, w in zip(cf(x), int_corners(x)))
check(ok, "//, % toward -inf, n / 2 a float, n * 2**62 a big int, divmod: CPython's values and types")
check_equal(tracejit.counters()["graph_breaks"], 0, "int corners: no graph break")

finish()
