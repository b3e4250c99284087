"""tracejit.same with a float64 reference (docs/api.md; TorchDynamo's
accuracy rule): a result outside `tol` passes when its RMSE against the
fp64 run is at most `multiplier` times eager's, and fails when it is much
less accurate; nested lists/tuples/dicts carry their fp64 parts; eager's
NaN error passes; scalars too. Real compiled functions (the test's
backend) against eager and float64 pass; injected inaccuracy fails."""
import torch
import tracejit

from e2e_util import BACKEND, check, finish

torch.manual_seed(0)

# Errors made to measure: the float64 truth, eager = truth + noise (RMS
# 1e-3), and results whose noise is k times eager's (independent noise of
# the same RMS, so they differ from eager elementwise).
fp64 = torch.randn(4096, dtype=torch.float64)
noise_eager = torch.randn(4096, dtype=torch.float64)
noise_res = torch.randn(4096, dtype=torch.float64)
noise_res *= noise_eager.norm() / noise_res.norm()
eager = (fp64 + 1e-3 * noise_eager).float()


def scaled(k):
    return (fp64 + k * 1e-3 * noise_res).float()


check(not torch.allclose(eager, scaled(1.0), atol=1e-9, rtol=1e-9), "an equally accurate result differs from eager")
check(tracejit.same(eager, scaled(1.0), fp64, tol=1e-9), "as accurate as eager against fp64: passes")
check(not tracejit.same(eager, scaled(1.0), tol=1e-9), "without fp64_ref the same pair fails at that tol")
check(tracejit.same(eager, scaled(0.1), fp64, tol=1e-9), "more accurate than eager: passes")
for k, ok in ((1.5, True), (1.9, True), (2.2, False), (5.0, False)):
    check(tracejit.same(eager, scaled(k), fp64, tol=1e-9) == ok,
          f"error {k} x eager's with the default multiplier 2.0: {'passes' if ok else 'fails'}")
check(tracejit.same(eager, scaled(2.6), fp64, tol=1e-9, multiplier=3.0), "multiplier=3.0 forgives 2.6 x")
check(not tracejit.same(eager, scaled(3.5), fp64, tol=1e-9, multiplier=3.0), "multiplier=3.0 does not forgive 3.5 x")
check(tracejit.same(eager.half(), scaled(2.6).half(), fp64, tol=1e-9, exact_dtype=True),
      "float16 results: the default multiplier is 3.0")
check(not tracejit.same(eager, eager + 0.1, fp64, tol=1e-9), "a constant offset far beyond eager's error fails")

# When eager is exact, only the tiny atol (tol / 10) is forgiven.
exact = torch.tensor([1.0, 2.0, 3.0])
check(tracejit.same(exact, exact + 4e-6, exact.double(), tol=1e-5), "eager exact: res within tol passes")
check(not tracejit.same(exact, exact + 1e-3, exact.double(), tol=1e-5), "eager exact: res off by 1e-3 fails")
check(tracejit.same(exact, exact + 5e-7, exact.double(), tol=1e-5), "eager exact: within tol / 10 of fp64 passes")

# Eager's error NaN (fp64 overflows where float32 gives inf): passes, as Dynamo's.
big = torch.tensor([1e308], dtype=torch.float64)
check(tracejit.same(torch.tensor([float("inf")]), torch.tensor([float("inf")]), big * 10, tol=1e-9),
      "equal infinities pass")
nan64 = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
check(tracejit.same(torch.tensor([5.0, 1.0]), torch.tensor([7.0, 1.0]), nan64, tol=1e-9),
      "eager's error against fp64 NaN: passes (Dynamo's rule)")

# Nested structures: each leaf against its fp64 part.
ref = {"a": [eager, eager * 2], "b": (eager.sum(),)}
f64 = {"a": [fp64, fp64 * 2], "b": (fp64.sum(),)}
res_ok = {"a": [scaled(1.5), scaled(1.5) * 2], "b": (scaled(1.5).sum(),)}
res_bad = {"a": [scaled(1.5), scaled(6.0) * 2], "b": (scaled(1.5).sum(),)}
check(tracejit.same(ref, res_ok, f64, tol=1e-9), "nested dict/list/tuple within 2x eager's error: passes")
check(not tracejit.same(ref, res_bad, f64, tol=1e-9), "nested: one leaf 6x eager's error fails")
check(not tracejit.same(ref, res_ok, None, tol=1e-9), "nested without fp64_ref: tol alone, fails")
check(not tracejit.same(ref, res_ok, {"a": [fp64]}, tol=1e-9),
      "an fp64_ref of another structure: tol alone for that part, fails")

# Python floats.
check(tracejit.same(1.0 + 3e-6, 1.0 + 4e-6, 1.0, tol=1e-9), "float: within 2x eager's error passes")
check(not tracejit.same(1.0 + 3e-6, 1.0 + 9e-6, 1.0, tol=1e-9), "float: 3x eager's error fails")
check(tracejit.same(float("nan"), float("nan"), 1.0, equal_nan=True) and not tracejit.same(1.0, float("nan"), 1.0),
      "float: NaN only with equal_nan")

# Integers and bools stay exact with fp64_ref.
check(not tracejit.same(torch.tensor([1, 2]), torch.tensor([1, 3]), torch.tensor([1.0, 2.0], dtype=torch.float64)),
      "integers exact even with fp64_ref")


# Real compiled code: a float32 program compiled with the test's backend
# against eager, with the float64 run as reference.
def model(a, w):
    h = torch.tanh(a @ w)
    return {"out": (h * h).sum(1).exp(), "parts": [h.mean(0), (a.sin() * 3).cumsum(1)]}


a64, w64 = torch.randn(64, 32, dtype=torch.float64), torch.randn(32, 16, dtype=torch.float64) / 4
a32, w32 = a64.float(), w64.float()
compiled = tracejit.compile(model, backend=BACKEND)
eager_out, res_out, fp64_out = model(a32, w32), compiled(a32, w32), model(a64, w64)
check(tracejit.same(eager_out, res_out, fp64_out, tol=1e-7), f"compiled ({BACKEND}) vs eager against fp64: passes")
bad = {"out": res_out["out"] * (1 + 1e-4), "parts": res_out["parts"]}
check(not tracejit.same(eager_out, bad, fp64_out, tol=1e-7), "the compiled result off by 1e-4 relative: fails")
finish()
