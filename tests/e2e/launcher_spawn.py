"""Under the launcher, sys.executable is the launcher itself, so children
started from it (multiprocessing's "spawn" and "forkserver" contexts, as in
DataLoader(multiprocessing_context="spawn") or torch.multiprocessing.spawn,
and subprocess runs of sys.executable) are launchers too: they import
tracejit without PYTHONPATH and get the parent's options (--backend,
--log, --compile-all travel as TRACEJIT_* variables)."""
import multiprocessing as mp
import os
import subprocess
import sys

import torch

from e2e_util import BACKEND, check, check_equal, finish

LAUNCHER_ROOT = os.environ.get("TRACEJIT_BUILD_ROOT")


def child(x):
    # Runs in a spawned process: it must be a launcher (_tracejit built in),
    # not python3.11 with an extension module found on PYTHONPATH.
    import tracejit
    f = tracejit.compile(lambda t: (t * 2).sin() + 1)
    y = f(x)
    return (sys.executable, "_tracejit" in sys.builtin_module_names, tracejit.config.backend,
            tracejit.same((x * 2).sin() + 1, y), os.environ.get("TRACEJIT_COMPILE_ALL"))


if __name__ == "__main__":
    import tracejit
    # The launcher must not need PYTHONPATH, in its children either.
    os.environ.pop("PYTHONPATH", None)
    check("_tracejit" in sys.builtin_module_names, "this process is the launcher")
    if LAUNCHER_ROOT:
        check_equal(os.path.realpath(sys.executable), os.path.realpath(os.path.join(LAUNCHER_ROOT, "tracejit")),
                    "sys.executable is the launcher")
    check(os.path.isabs(sys.executable) and os.access(sys.executable, os.X_OK), "sys.executable is an absolute program")

    x = torch.randn(64)
    for method in ("spawn", "forkserver"):
        with mp.get_context(method).Pool(1) as pool:
            exe, builtin, backend, same, _ = pool.map(child, [x])[0]
        check_equal(exe, sys.executable, f"a {method} child runs sys.executable")
        check(builtin, f"a {method} child is a launcher (tracejit's runtime built in)")
        check_equal(backend, tracejit.config.backend, f"a {method} child has the parent's backend")
        check(same, f"a {method} child compiles and matches eager")

    r = subprocess.run([sys.executable, "-c", "import sys, tracejit; print('_tracejit' in sys.builtin_module_names)"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and r.stdout.strip() == "True",
          f"subprocess of sys.executable imports tracejit: {r.stdout!r} {r.stderr[-300:]!r}")
    # Python's own options reach the child as with python3.11 (-W, -X).
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", "-X", "utf8", "-c",
                        "import sys; print(sys.flags.utf8_mode, sys.warnoptions)"],
                       capture_output=True, text=True, timeout=120)
    check_equal(r.stdout.strip(), "1 ['error::UserWarning']", "python options through sys.executable")
    # --compile-all reaches children started from sys.executable.
    r = subprocess.run([sys.executable, "--compile-all", "-c",
                        "import os, subprocess, sys; print(subprocess.run([sys.executable, '-c', "
                        "'import os; print(os.environ.get(\"TRACEJIT_COMPILE_ALL\"))'], capture_output=True, "
                        "text=True).stdout.strip())"],
                       capture_output=True, text=True, timeout=120)
    check_equal(r.stdout.strip(), "1", "--compile-all reaches a child launcher")
    print(f"backend {BACKEND}")
    finish()
