"""`pip install --no-build-isolation .` (meson-python) into a fresh venv
(--system-site-packages, for Debian's torch): the venv's python imports
tracejit with no PYTHONPATH, the venv's bin/tracejit launcher finds the
venv's package, is sys.executable, and its spawn children work.

usage: pip_install.py SOURCE_ROOT PIP_BUILD_DIR BUILD_ROOT   (run by /usr/bin/python3.11)
PIP_BUILD_DIR is meson-python's build directory (config setting builddir), kept between
runs so that a second run rebuilds only what changed; a sibling of
BUILD_ROOT configured with its debug/optimization/pch options compiles the
same commands, so ccache serves them."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from install_checks import check, check_launcher, check_python, clean_env, finish

source, builddir, mainbuild = (os.path.abspath(a) for a in sys.argv[1:4])


def ccache_report(stats_log):
    """What ccache did for build-pip's compiles (its CCACHE_STATSLOG): one
    line for the test's log, so that a slow run shows whether build/'s
    entries served it (every compile should be a hit). Not an assertion: a
    machine without ccache, or with it cold, builds correctly but slowly."""
    if not os.path.exists(stats_log):
        return "build-pip: no ccache statistics (nothing compiled, or ccache not in use)"
    entries = []  # [source, hit]
    with open(stats_log) as f:
        for line in f:
            line = line.strip()
            if line.startswith("# "):
                entries.append([line[2:], None])
            elif entries and entries[-1][1] is None and line in ("direct_cache_hit", "preprocessed_cache_hit"):
                entries[-1][1] = True
            elif entries and entries[-1][1] is None and line == "cache_miss":
                entries[-1][1] = False
    compiles = [e for e in entries if e[1] is not None]
    misses = [os.path.relpath(e[0], source) for e in compiles if not e[1]]
    line = f"build-pip: {len(compiles) - len(misses)} of {len(compiles)} compiles from ccache"
    return line + (f"; misses: {', '.join(misses[:20])}" if misses else "")


# The options of the build this test belongs to, so that meson-python's
# build compiles the same commands and ccache serves every one of them.
# meson-python 0.12 sets up with `-Ddebug=false -Doptimization=2` on its
# command line, which beats a machine file's [built-in options]: `debug`
# must come as a setup argument of ours (they follow meson-python's). pip
# 23.0 passes one value per --config-settings key, so that is the one
# argument when the build's other options are meson-python's (optimization
# 2, no pch, line tables); otherwise they travel in a machine file (project
# options there do hold), and `debug` follows meson-python's.
with open(os.path.join(mainbuild, "meson-info", "intro-buildoptions.json")) as f:
    options = {o["name"]: o["value"] for o in json.load(f)}
if str(options["optimization"]) == "2" and not options.get("pch") and not options.get("full_debug_info"):
    setup_arg = f"-Ddebug={str(options['debug']).lower()}"
else:
    options_file = builddir + ".ini"
    with open(options_file, "w") as f:
        f.write("[built-in options]\n")
        f.write(f"debug = {str(options['debug']).lower()}\noptimization = '{options['optimization']}'\n")
        f.write("[project options]\n")
        for name in ("pch", "full_debug_info"):
            if name in options:
                f.write(f"{name} = {str(options[name]).lower()}\n")
    setup_arg = f"--native-file={options_file}"
tmp = tempfile.mkdtemp(prefix="tracejit_venv_")
try:
    venv = os.path.join(tmp, "venv")
    r = subprocess.run(["/usr/bin/python3.11", "-m", "venv", "--system-site-packages", "--without-pip", venv],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"venv created: {r.stderr[-500:]!r}")
    python = os.path.join(venv, "bin", "python")
    # The system's pip (python3-pip) installs into the venv it runs in.
    env = clean_env()
    env["CCACHE_STATSLOG"] = os.path.join(tmp, "ccache-stats.log")
    start = time.monotonic()
    r = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--disable-pip-version-check",
                        f"--config-settings=builddir={builddir}",
                        f"--config-settings=setup-args={setup_arg}", source],
                       capture_output=True, text=True, env=env, timeout=3600)
    print(f"pip install took {time.monotonic() - start:.0f} s; {ccache_report(env['CCACHE_STATSLOG'])}")
    check(r.returncode == 0, f"pip install --no-build-isolation .: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    if r.returncode != 0:
        finish()  # nothing installed to check
    site = os.path.join(venv, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
    check_python(python, site, "venv python")
    check_launcher(os.path.join(venv, "bin", "tracejit"), site, "venv launcher")
    r = subprocess.run([python, "-m", "pip", "uninstall", "-y", "tracejit"], capture_output=True, text=True,
                       env=clean_env(), timeout=300)
    check(r.returncode == 0 and not os.path.exists(os.path.join(venv, "bin", "tracejit")),
          f"pip uninstall removes the launcher: {r.stderr[-300:]!r}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
