"""`meson install` into a prefix (through DESTDIR), the prefix copied
elsewhere: the copied launcher finds the copied package (nothing of the
build or source tree), sys.executable is the copy, spawn children work;
the prefix's python dir on PYTHONPATH gives /usr/bin/python3.11 the module.

usage: install_prefix.py BUILD_ROOT   (run by /usr/bin/python3.11)"""
import os
import shutil
import subprocess
import sys
import tempfile

from install_checks import PROBE, check, check_launcher, finish, run_json

build = os.path.abspath(sys.argv[1])
tmp = tempfile.mkdtemp(prefix="tracejit_prefix_")
try:
    dest = os.path.join(tmp, "destdir")
    r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--destdir", dest, "--quiet"],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"meson install --destdir: {r.stderr[-800:]!r}")
    # DESTDIR/<prefix>/... -> copy the prefix somewhere else entirely.
    launchers = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tracejit"]
    check(len(launchers) == 1, f"one launcher installed: {launchers}")
    prefix = os.path.dirname(os.path.dirname(launchers[0]))
    copy = os.path.join(tmp, "moved", "prefix")
    shutil.copytree(prefix, copy, symlinks=True)
    shutil.rmtree(dest)
    inits = [os.path.join(d, f) for d, _, fs in os.walk(copy) for f in fs
             if f == "__init__.py" and os.path.basename(d) == "tracejit"]
    check(len(inits) == 1, f"the package installed once: {inits}")
    exts = [f for d, _, fs in os.walk(copy) for f in fs if f.startswith("_tracejit") and f.endswith(".so")]
    check(len(exts) == 1, f"the extension module installed: {exts}")
    check_launcher(os.path.join(copy, "bin", "tracejit"), copy, "copied prefix")
    if inits:
        pydir = os.path.dirname(os.path.dirname(inits[0]))
        out = run_json(["/usr/bin/python3.11", "-c", f"import sys; sys.path.insert(0, {pydir!r})\n" + PROBE],
                       "python3.11 with the prefix's python dir on sys.path")
        check(out is not None and out["package"].startswith(pydir + os.sep) and not out["builtin"] and out["ok"],
              f"python3.11 imports the prefix's package and extension module: {out}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
