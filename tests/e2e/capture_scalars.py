"""Issue 11: Tensor.item(). With config.capture_scalar_outputs the number
stays in the graph (a 0-d float64/int64 node) through Python arithmetic,
back into tensor ops and out as a Python number, with CPython's values.
Without it (the default, issue 42) the same when the frame then traces
whole; when its value is needed (a branch) the graph breaks at the read
with a reason naming item() (more in capture_scalar_reads)."""
import math

import torch

import tracejit
from capture_util import expect
from e2e_util import check, check_equal, finish

x = torch.randn(4, 6)
ints = torch.arange(6).reshape(2, 3)


def scale_by_max(t):
    return t * t.abs().max().item()


def branch_on_max(t):
    return t * 2 if t.abs().max().item() > 1 else t


tracejit.config.capture_scalar_outputs = False
expect("item() without capture_scalar_outputs, into a tensor op", scale_by_max, (x,))
ex = expect("item() without capture_scalar_outputs, a branch", branch_on_max, (x,), graphs=2, breaks=1)
check(any("Tensor.item()" in r.reason for r in ex.break_reasons), "the break reason names item()")

tracejit.config.capture_scalar_outputs = True
expect("item() feeding a tensor op", scale_by_max, (x,))
# (max/min: exact in any order, so every backend gives eager's float; a
# fused sum may round differently on the llvm backend.)
expect("item() returned as a Python float", lambda t: t.max().item() * 2 + 1, (x,))
expect("float arithmetic with constants", lambda t: (t, (1 - 0.9 ** 2) * t.max().item() - 3), (x,))
expect("two numbers", lambda t: t.max().item() + t.min().item() * 0.5, (x,))
expect("a number divided by a constant", lambda t: t / (t.max().item() / 2), (x,))
expect("unary minus and float()", lambda t: (-t.max().item(), float(t.min().item())), (x,))
# An int64 tensor's int has no known magnitude: int arithmetic on it may
# leave int64's range where Python's ints grow, so it breaks there (it was
# traced, wrapping, before); an int32 tensor's int is traced.
ex = expect("an int64 item and int arithmetic", lambda t: t.sum().item() * 3 - 1, (ints,), graphs=1, breaks=1)
check(any("int64's range" in r.reason for r in ex.break_reasons), "the break reason names int64's range")
expect("an int32 item and int arithmetic", lambda t: t.sum().int().item() * 3 - 1, (ints,))
expect("int item times a float tensor", lambda t: x * ints[1, 2].item(), (ints,))
expect("isinstance of an item", lambda t: isinstance(t.sum().item(), float), (x,), graphs=1, breaks=0)
expect("torch.tensor of a constant", lambda t: t + torch.tensor(2.5) + torch.tensor(3), (x,))


def branch_on_item(t):
    if t.sum().item() > 0:
        return t + 1
    return t - 1


# Control flow on the value needs the data: a break, right values.
ex = expect("a branch on an item", branch_on_item, (x,), graphs=2, breaks=1)
check(any("data-dependent" in r.reason for r in ex.break_reasons), "branch on an item: data-dependent reason")


def divide_by_item(t):
    return 1.0 / t.abs().max().item()


# Python raises ZeroDivisionError where ATen gives inf: not traced.
expect("a number as a divisor", divide_by_item, (x,), graphs=1, breaks=1)
zeros = torch.zeros(3)
try:
    tracejit.compile(divide_by_item)(zeros)
    check(False, "1.0 / 0.0 from item() raises ZeroDivisionError as in eager")
except ZeroDivisionError:
    check(True, "1.0 / 0.0 from item() raises ZeroDivisionError as in eager")
expect("math.sqrt of an item (may raise: not traced)", lambda t: math.sqrt(t.abs().max().item()), (x,), graphs=1, breaks=1)
tracejit.config.capture_scalar_outputs = False
finish()
