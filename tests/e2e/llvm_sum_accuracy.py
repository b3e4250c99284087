"""The llvm backend's sums are as accurate as eager's (issue 39, round 26;
tests/fuzz/regressions/llvm_sum_of_expanded_input_accuracy_9996558.py):
sums of 10^5..10^6 float32 (and half, bfloat16) elements over expanded
(stride-0), strided, transposed and non-innermost dims, mean, and
reductions fused with elementwise producers (softmax, layer_norm, var),
each compared with the float64 result: the compiled result's RMS error is
at most tracejit.same's multiplier (2; 3 for half types) times eager's,
with no absolute tolerance on top (tol=0). Before round 26 a loop nest's
innermost dim summed in one float chain of up to 2,048 adds: the expanded
sum was 66x further from float64 than eager, the transposed one 4x."""
import torch

import tracejit
from e2e_util import check, finish

torch.manual_seed(0)


def kernels():
    c = tracejit.counters()
    return c.get("kernels_compiled", 0) + c.get("kernel_cache_hits", 0)


def case(name, fn, x, dtype=torch.float32):
    x = x.to(dtype)
    want, want64 = fn(x), fn(x.double())
    before = kernels()
    got = tracejit.compile(fn, backend="llvm")(x)
    check(kernels() > before, f"{name}: an LLVM kernel computes it")
    e_eager = (want.double() - want64).square().mean().sqrt().item()
    e_llvm = (got.double() - want64).square().mean().sqrt().item()
    check(e_eager > 0, f"{name}: eager's own error is not zero (a case that tells)")
    check(tracejit.same(want, got, want64, tol=0),
          f"{name}: as accurate as eager (RMS error against float64: llvm {e_llvm:.3e}, eager {e_eager:.3e})")


n = 10**6
case("sum of (1000, 1) expanded to (1000, 1000)", lambda x: x.sum(), (torch.randn(1000, 1) + 1).expand(1000, 1000))
case("sum of (1, 1000) expanded to (1000, 1000)", lambda x: x.sum(), torch.randn(1, 1000).expand(1000, 1000))
case("sum(1) of (100, 1, 100) expanded to (100, 100, 100)", lambda x: x.sum(1),
     (torch.randn(100, 1, 100) + 1).expand(100, 100, 100))
case("mean of (500, 1) expanded to (500, 400)", lambda x: x.mean(), (torch.randn(500, 1) + 1).expand(500, 400))
case("sum of a transposed (1000, 1000)", lambda x: x.sum(), torch.randn(1000, 1000).t())
case("sum of every second of 2e6", lambda x: x.sum(), (torch.randn(2 * n) + 1)[::2])
case("sum(0) of (500000, 2)", lambda x: x.sum(0), torch.randn(n // 2, 2) + 1)
case("sum(1) of (3, 100000, 3)", lambda x: x.sum(1), torch.randn(3, 100000, 3) + 1)
case("sum of a contiguous 1e6", lambda x: x.sum(), torch.randn(n) + 1)
case("sum of exp of (1000, 1) expanded", lambda x: (x.exp() * 2).sum(), torch.randn(1000, 1).expand(1000, 1000))
case("softmax over dim 0 of (20000, 50)", lambda x: torch.softmax(x, 0), torch.randn(20000, 50))
case("layer_norm of a transposed (1000, 1000)", lambda x: torch.nn.functional.layer_norm(x, (1000,)),
     torch.randn(1000, 1000).t() + 2)
case("var(0) of (100000, 3)", lambda x: x.var(0), torch.randn(100000, 3) + 3)
for dt in (torch.float16, torch.bfloat16):
    case(f"{dt} mean of (1000, 1) expanded to (1000, 1000)", lambda x: x.mean(),
         torch.randn(1000, 1).expand(1000, 1000), dt)
    case(f"{dt} sum(0) of (100000, 2) * 1e-3", lambda x: x.sum(0), torch.randn(100000, 2) * 1e-3, dt)

finish()
