"""The launcher's options and environment (issue 18, items 23 and 24):
python3.11's interpreter options take effect (-X dev, -X utf8, clusters),
--help lists tracejit's options, backends, log topics and environment
variables, a missing script is reported as python3.11 words it, and every
malformed TRACEJIT_* value is one line and exit status 2, with or without
--compile-all; booleans accept 1/0/true/false/yes/no/on/off."""
import os
import subprocess
import tempfile

from e2e_util import check, check_equal, finish

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build"))
LAUNCHER = os.path.join(BUILD, "tracejit")
PYTHON = "/usr/bin/python3.11"


def run(*args, env=None, launcher=LAUNCHER, cwd=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACEJIT_") or k == "TRACEJIT_BUILD_ROOT"}
    full_env.pop("PYTHONPATH", None)
    full_env.update(env or {})
    return subprocess.run([launcher, *args], capture_output=True, text=True, env=full_env, cwd=cwd or HERE, timeout=120)


# --- interpreter options, as python3.11
FLAGS = "import sys; print(sys.flags.dev_mode, sys.flags.utf8_mode, sys.flags.dont_write_bytecode, sys.flags.optimize)"
for args in (["-X", "dev"], ["-X", "utf8"], ["-Xutf8"], ["-uB"], ["-OO"], ["-X", "dev", "-X", "utf8", "-O"]):
    want = run(*args, "-c", FLAGS, launcher=PYTHON)
    got = run(*args, "-c", FLAGS)
    check_equal(got.stdout, want.stdout, f"{' '.join(args)}: sys.flags as python3.11")
got = run("-Werror", "-c", "import sys; print(sys.warnoptions)")
check_equal(got.stdout.strip(), "['error']", "-Werror (value attached) reaches sys.warnoptions")
got = run("-X", "dev", "-c", "import warnings, sys; print(sys.flags.dev_mode, 'default' in str(warnings.filters[0]))")
check_equal(got.stdout.strip(), "True True", "-X dev turns on the development mode's warnings")
got = run("-c", "import sys; print(sys.argv)", "-X", "dev", "--backend")
check_equal(got.stdout.strip(), "['-c', '-X', 'dev', '--backend']", "options after -c code belong to sys.argv")

# --- --help
got = run("--help")
check_equal(got.returncode, 0, "--help exits 0")
for word in ("--backend", "--compile-all", "--log", "--version", "llvm", "eager", "aot_eager", "nvrtc",
             "graph_breaks", "recompiles", "guards", "graph_code", "skips", "TRACEJIT_BACKEND",
             "TRACEJIT_COMPILE_ALL", "TRACEJIT_LOGS", "TRACEJIT_CACHE_SIZE_LIMIT", "TRACEJIT_SUPPRESS_ERRORS",
             "TRACEJIT_DEBUG_CHECK_GUARDS"):
    check(word in got.stdout, f"--help mentions {word}")

# --- a script that cannot be opened
tmp = tempfile.mkdtemp(prefix="tracejit_opts_")
want = run("no_such_script.py", launcher=PYTHON, cwd=tmp)
got = run("no_such_script.py", cwd=tmp)
check_equal(got.returncode, want.returncode, "missing script: python3.11's exit status")
check_equal(got.stderr, want.stderr.replace(PYTHON, "tracejit", 1), "missing script: python3.11's message, our name")
check(got.stderr.startswith("tracejit: can't open file '"), f"missing script: {got.stderr!r}")

# --- malformed environment values: one line, exit 2, everywhere
BAD = {
    "TRACEJIT_CACHE_SIZE_LIMIT": "abc",
    "TRACEJIT_SUPPRESS_ERRORS": "maybe",
    "TRACEJIT_REPRO_LEVEL": "9",
    "TRACEJIT_REPRO_TOLERANCE": "tiny",
    "TRACEJIT_REPRO_AFTER": "never",
    "TRACEJIT_DEBUG_INJECT_BUG": "all",
    "TRACEJIT_VERBOSE": "2",
    "TRACEJIT_COMPILE_ALL": "maybe",
    "TRACEJIT_BACKEND": "inductor",
    "TRACEJIT_LOGS": "everything",
}
for name, value in BAD.items():
    for extra in ([], ["--compile-all"]):
        got = run(*extra, "-c", "print('ran')", env={name: value})
        lines = got.stderr.strip().splitlines()
        what = f"{name}={value} {' '.join(extra)}".strip()
        check(got.returncode == 2 and len(lines) == 1 and lines[0].startswith("tracejit: ") and name in lines[0]
              and "tracejit: tracejit" not in lines[0] and got.stdout == "",
              f"{what}: one line naming it, exit 2 ({got.returncode}, {got.stderr.strip()!r})")

# The extension-module build: importing tracejit raises one ValueError
# whose message names the variable (no repeated prefix).
env = dict(os.environ, TRACEJIT_CACHE_SIZE_LIMIT="abc", PYTHONPATH=os.path.join(BUILD, "python"))
got = subprocess.run([PYTHON, "-c", "import tracejit"], capture_output=True, text=True, env=env, timeout=120)
check(got.returncode == 1 and got.stderr.strip().splitlines()[-1] ==
      "ValueError: bad TRACEJIT_CACHE_SIZE_LIMIT='abc': expected an int, got 'abc'",
      f"python3.11 -c 'import tracejit' with a bad value: {got.stderr.strip().splitlines()[-1:]}")

# --- booleans and large ints
for text, want in (("1", True), ("0", False), ("true", True), ("False", False), ("yes", True), ("NO", False),
                   ("on", True), ("off", False)):
    got = run("-c", "import tracejit; print(tracejit.config.suppress_errors)", env={"TRACEJIT_SUPPRESS_ERRORS": text})
    check_equal(got.stdout.strip(), str(want), f"TRACEJIT_SUPPRESS_ERRORS={text}")
COMPILE_ALL_PROBE = (
    "import torch, tracejit\n"
    "def f(x):\n    return x + 1\n"
    "f(torch.ones(2))\n"
    "print(tracejit.counters()['frames_traced'] > 0)\n")
for text, want in (("on", "True"), ("yes", "True"), ("off", "False"), ("0", "False")):
    got = run("-c", COMPILE_ALL_PROBE, env={"TRACEJIT_COMPILE_ALL": text})
    check_equal(got.stdout.strip(), want, f"TRACEJIT_COMPILE_ALL={text}")
got = run("-c", "import tracejit; print(tracejit.config.cache_size_limit); tracejit.config.cache_size_limit = 2**40; "
          "print(tracejit.config.cache_size_limit)", env={"TRACEJIT_CACHE_SIZE_LIMIT": str(2**31 - 1)})
check_equal(got.stdout.split(), [str(2**31 - 1), str(2**40)], "cache_size_limit takes any positive int")

finish()
