"""The launcher behaves like python3.11: argv, exit codes, tracebacks,
-m/-c/stdin/interactive, __main__, imports from the script's directory;
its own options and their errors."""
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

from e2e_util import check, check_equal, finish

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")


def run(*args, stdin=None, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.pop("PYTHONPATH", None)  # the launcher must not need it
    full_env.update(env or {})
    return subprocess.run([LAUNCHER, *args], input=stdin, capture_output=True, text=True, env=full_env,
                          cwd=cwd or HERE, timeout=120)


def script(text):
    fd, path = tempfile.mkstemp(suffix=".py", dir=TMP)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


TMP = tempfile.mkdtemp(prefix="tracejit_launcher_")
with open(os.path.join(TMP, "helper_mod.py"), "w") as f:
    f.write("GREETING = 'hello from the script dir'\n")

r = run("--version")
lines = r.stdout.splitlines()
check_equal(r.returncode, 0, "--version exits 0")
check(lines[0].startswith("tracejit "), f"--version line 1: {lines[0]!r}")
check(lines[1].startswith("Python 3.11."), f"--version line 2: {lines[1]!r}")
check(lines[2].startswith("torch 1.13"), f"--version line 3: {lines[2]!r}")
check(lines[3].startswith("LLVM "), f"--version line 4: {lines[3]!r}")
check(lines[4].startswith("NVRTC ") and (lines[4] == "NVRTC unavailable" or lines[4][6].isdigit()),
      f"--version line 5: {lines[4]!r}")

r = run("-c", "import torch, tracejit; print(torch.__version__)")
check(r.returncode == 0 and r.stdout.startswith("1.13"), f"-c imports torch and tracejit: {r.stdout!r} {r.stderr[-300:]!r}")

r = run(script("import sys; sys.exit(3)"))
check_equal(r.returncode, 3, "sys.exit(3) exits 3")

r = run(script("def f():\n    raise ValueError('bad value')\nf()\n"))
check_equal(r.returncode, 1, "uncaught exception exits 1")
check("Traceback (most recent call last)" in r.stderr and "ValueError: bad value" in r.stderr,
      "uncaught exception prints a Python traceback")

path = script("import sys, helper_mod\nprint(sys.argv)\nprint(__name__)\nprint(helper_mod.GREETING)\n")
r = run(path, "a", "--b", "-c")
check_equal(r.stdout.splitlines(), [repr([path, "a", "--b", "-c"]), "__main__", "hello from the script dir"],
            "sys.argv, __name__ and imports from the script's directory")

r = run("-c", "import sys; print(sys.argv)", "x", "y")
check_equal(r.stdout.strip(), "['-c', 'x', 'y']", "-c argv")

r = run("-m", "launcher_pkg", "7", cwd=HERE)
check_equal((r.returncode, r.stdout.strip()), (7, "module-main __main__ ['7']"), "-m package with args")

r = run("-", stdin="import sys\nprint('from stdin', sys.argv)\n")
check_equal(r.stdout.strip(), "from stdin ['-']", "script from stdin with -")

r = run(script("import sys\nprint(sys.stdin.read().upper())\n"), stdin="piped text")
check_equal(r.stdout.strip(), "PIPED TEXT", "stdin reaches the script")

r = run("-u", "-B", "-c", "print('flags ok')")
check_equal(r.stdout.strip(), "flags ok", "python flags pass through")

for args, what in [(["--bogus"], "unknown option"), (["--backend", "nope", "-c", "pass"], "unknown backend"),
                   (["--log", "nope", "-c", "pass"], "unknown log topic"), (["--backend"], "missing value"),
                   (["-Z", "-c", "pass"], "unknown python flag")]:
    r = run(*args)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("tracejit: "),
          f"{what}: exit 2 with one line ({r.returncode}, {r.stderr.strip()!r})")

r = run("--backend", "eager", "-c", "import tracejit; print(tracejit.config.backend)")
check_equal(r.stdout.strip(), "eager", "--backend sets the default backend")

r = run("-c", "import tracejit; print(tracejit.config.backend)", env={"TRACEJIT_BACKEND": "aot_eager"})
check_equal(r.stdout.strip(), "aot_eager", "TRACEJIT_BACKEND sets the default backend")

r = run("--log", "graph_breaks,recompiles", "-c", "import _tracejit; print(_tracejit.log_enabled('recompiles'), _tracejit.log_enabled('guards'))")
check_equal(r.stdout.strip(), "True False", "--log enables exactly the named topics")

compile_all_script = script(
    "import _tracejit\n"
    "seen = []\n"
    "_tracejit._set_frame_callback(lambda code, args: seen.append(code.co_name))\n"
    "import json\n"
    "def user_fn(x):\n    return json.dumps(x)\n"
    "user_fn(1)\n"
    "_tracejit._set_frame_callback(None)\n"
    "print('user_fn' in seen, any(n in seen for n in ('dumps', 'encode')))\n")
r = run("--compile-all", compile_all_script)
check_equal(r.stdout.strip(), "True False", "--compile-all traces user frames, not the standard library")
r = run(compile_all_script)
check_equal(r.stdout.strip(), "False False", "without --compile-all no frame is traced")

# The interactive prompt when stdin is a tty.
pid, fd = pty.fork()
if pid == 0:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    os.execve(LAUNCHER, [LAUNCHER, "-q"], env)
out = b""
os.write(fd, b"print(6 * 7)\n")
os.write(fd, b"import sys; sys.exit(5)\n")
deadline = time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 1.0)
    if not ready:
        continue
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
text = out.decode(errors="replace")
check(">>> " in text and "42" in text, f"interactive prompt evaluates input ({text[-200:]!r})")
check_equal(os.waitstatus_to_exitcode(status), 5, "interactive sys.exit(5)")

finish()
