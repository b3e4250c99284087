"""Tiny assertion helpers for the e2e programs: each check prints a line,
failures are counted, and finish() exits 1 if any failed.

BACKEND is the backend the programs compile with: the suites run once per
backend (tests/e2e/meson.build sets TRACEJIT_TEST_BACKEND), so every new
backend inherits every test."""
import os
import sys
import traceback

BACKEND = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")

_failures = []
_passes = 0


# The backends that run ATen's own kernels give eager's values bit for bit;
# llvm's fused kernels round differently (within float tolerance).
EXACT = BACKEND in ("eager", "aot_eager")


def tensors_same(got, want, rtol=1e-5, atol=1e-6, dtypes=False):
    """Two tensors, or two lists/tuples of them, equal: bit for bit on the
    EXACT backends, within rtol/atol otherwise; `dtypes`: theirs agree too."""
    import torch  # here: not every e2e program imports torch
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    if len(got) != len(want) or (dtypes and any(g.dtype != w.dtype for g, w in zip(got, want))):
        return False
    if EXACT:
        return all(torch.equal(g, w) for g, w in zip(got, want))
    return all(torch.allclose(g, w, rtol=rtol, atol=atol) for g, w in zip(got, want))


def check(cond, what):
    global _passes
    if cond:
        _passes += 1
        print(f"ok    {what}")
    else:
        _failures.append(what)
        print(f"FAIL  {what}")


def check_equal(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}" if got != want else what)


def check_raises(exc_type, fn, what):
    try:
        fn()
    except exc_type as e:
        check(True, f"{what} ({type(e).__name__}: {e})")
        return e
    except BaseException as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        traceback.print_exc()
        return None
    check(False, f"{what}: nothing raised")
    return None


def finish():
    print(f"{_passes} checks passed, {len(_failures)} failed")
    if _failures:
        for f in _failures:
            print(f"  failed: {f}")
        sys.exit(1)
