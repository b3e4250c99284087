"""tracejit's warnings go through Python's `warnings` module as
tracejit.TracejitWarning (a UserWarning): filters, `-W error::UserWarning`
and warnings.catch_warnings apply. Covered: a runtime warning
(cache_size_limit) and a lower layer's (the nvrtc backend's "no CUDA
device", queued by the jit layer and raised at the user's frame)."""
import os
import subprocess
import sys
import warnings

import torch

import tracejit
from e2e_util import check, check_equal, finish

LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")

check(issubclass(tracejit.TracejitWarning, UserWarning), "TracejitWarning is a UserWarning")
check("TracejitWarning" in tracejit.__all__ and tracejit.TracejitWarning.__module__ == "tracejit",
      "tracejit.TracejitWarning is exported")

# A runtime warning, recorded with its category.
tracejit.config.cache_size_limit = 1
f = tracejit.compile(lambda x: x.cos() + 1, backend="eager", dynamic=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for n in (2, 3):
        f(torch.ones(n))
limit = [w for w in caught if "cache_size_limit" in str(w.message)]
check(len(limit) == 1 and limit[0].category is tracejit.TracejitWarning,
      f"the cache_size_limit warning is a TracejitWarning: {[(w.category, str(w.message)) for w in caught]}")
tracejit.config.cache_size_limit = 8

NVRTC = ("import torch, tracejit\n"
         "f = tracejit.compile(lambda x: x.sin() + 1, backend='nvrtc')\n"
         "try:\n"
         "    y = f(torch.ones(4))\n"
         "except tracejit.TracejitWarning as e:\n"
         "    print('RAISED', type(e).__name__, e)\n"
         "    raise SystemExit(3)\n"
         "print('RESULT', tracejit.same(torch.ones(4).sin() + 1, y))\n"
         "print('SECOND', tracejit.same(torch.ones(4).sin() + 1, f(torch.ones(4))))\n")


def launcher(*args):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run([LAUNCHER, *args], capture_output=True, text=True, timeout=300, env=env)


r = launcher("-c", NVRTC)
no_device = "no CUDA device" in r.stderr
if "nvrtc" not in tracejit._C.known_backends() or not no_device:
    print(f"note  the nvrtc backend has a device or is not built here: its no-device warning is not checked "
          f"(stderr {r.stderr[-200:]!r})")
else:
    check(r.returncode == 0 and "RESULT True" in r.stdout, f"nvrtc without a device runs: {r.stdout!r}")
    check_equal(r.stderr.count("TracejitWarning: tracejit: the nvrtc backend found no CUDA device ("), 1,
                "the no-device warning is shown once, as a TracejitWarning (not a bare stderr line)")
    check("tracejit: warning:" not in r.stderr, "no bare stderr warning")
    r = launcher("-W", "error::UserWarning", "-c", NVRTC)
    check(r.returncode == 3 and "RAISED TracejitWarning tracejit: the nvrtc backend found no CUDA device" in r.stdout,
          f"-W error::UserWarning turns the no-device warning into an exception: {r.returncode} {r.stdout!r} "
          f"{r.stderr[-500:]!r}")
    r = launcher("-W", "ignore::tracejit.TracejitWarning", "-c", NVRTC)
    check(r.returncode == 0 and "no CUDA device" not in r.stderr and "RESULT True" in r.stdout,
          f"a filter on tracejit.TracejitWarning silences it: {r.stderr[-300:]!r}")
    # The second call after the exception runs the cached graph.
    r = launcher("-c", "import warnings\nwarnings.simplefilter('error', UserWarning)\n" + NVRTC.replace(
        "    raise SystemExit(3)\n", "    print('SECOND', tracejit.same(torch.ones(4).sin() + 1, f(torch.ones(4))))\n"
        "    raise SystemExit(3)\n"))
    check(r.returncode == 3 and "RAISED" in r.stdout and "SECOND True" in r.stdout,
          f"warnings.simplefilter('error') raises once; the next call runs: {r.stdout!r} {r.stderr[-300:]!r}")
finish()
