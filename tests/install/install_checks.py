"""Checks shared by the installation tests (install_prefix.py, pip_install.py):
an installed python imports tracejit with no PYTHONPATH, an installed
launcher finds its own package, is sys.executable, and its spawn children
are launchers that compile too."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_util import check, check_equal, finish  # noqa: E402,F401

# What runs in the installed interpreter: compile a function with the llvm
# backend (LLVM kernels, so the installed runtime does real work), compare
# with eager, report where things came from.
PROBE = r"""
import json, sys, torch, tracejit
x = torch.randn(1000)
f = tracejit.compile(lambda t: (t * 2).sin() + t.exp(), backend="llvm")
ok = tracejit.same((x * 2).sin() + x.exp(), f(x))
print(json.dumps({"executable": sys.executable, "package": tracejit.__file__,
                  "builtin": "_tracejit" in sys.builtin_module_names, "ok": ok,
                  "kernels": tracejit.counters()["kernels_compiled"] + tracejit.counters()["kernel_cache_hits"]}))
"""

# A script whose spawn child imports tracejit and compiles.
SPAWN_SCRIPT = r"""
import json, multiprocessing as mp, sys

def child(_):
    import torch, tracejit
    x = torch.randn(100)
    f = tracejit.compile(lambda t: t.cos() * 3)
    return sys.executable, "_tracejit" in sys.builtin_module_names, tracejit.same(x.cos() * 3, f(x))

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        exe, builtin, ok = pool.map(child, [0])[0]
    print(json.dumps({"parent": sys.executable, "child": exe, "builtin": builtin, "ok": ok}))
"""


def clean_env():
    """The environment of a user who has not set PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return env


def run_json(argv, what, cwd=None):
    r = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=600, cwd=cwd or tempfile.gettempdir())
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, f"{what}: exit {r.returncode}, stdout {r.stdout[-500:]!r}, stderr {r.stderr[-1500:]!r}")
        return None


def check_python(python, root, what):
    """`python -c 'import tracejit'` works and takes tracejit from under root."""
    out = run_json([python, "-c", PROBE], f"{what}: import tracejit")
    if out is None:
        return
    check(out["package"].startswith(root + os.sep), f"{what}: tracejit from {out['package']} (under {root})")
    check(not out["builtin"], f"{what}: the runtime is the installed extension module")
    check(out["ok"] and out["kernels"] > 0, f"{what}: compiles with the llvm backend and matches eager")


def check_launcher(launcher, root, what):
    """The launcher finds its package under root, is sys.executable, and its
    spawn children are launchers."""
    out = run_json([launcher, "-c", PROBE], f"{what}: launcher")
    if out is not None:
        check(out["package"].startswith(root + os.sep), f"{what}: the launcher's tracejit is {out['package']} (under {root})")
        check_equal(out["executable"], launcher, f"{what}: sys.executable is the launcher")
        check(out["builtin"], f"{what}: the launcher's runtime is built in")
        check(out["ok"] and out["kernels"] > 0, f"{what}: the launcher compiles with llvm and matches eager")
    with tempfile.TemporaryDirectory(prefix="tracejit_spawn_") as tmp:
        path = os.path.join(tmp, "spawn_child.py")
        with open(path, "w") as f:
            f.write(SPAWN_SCRIPT)
        out = run_json([launcher, path], f"{what}: spawn child", cwd=tmp)
    if out is not None:
        check_equal(out["child"], launcher, f"{what}: the spawn child runs the launcher")
        check(out["builtin"] and out["ok"], f"{what}: the spawn child has tracejit and compiles")
