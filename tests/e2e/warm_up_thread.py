"""The warm-up thread (runtime/warm_up.h, issue 44): `import tracejit`
sets up the LLVM JIT on a thread of its own, so the first compiled call
does not. Checked through the `perf` log of child processes: with the
thread, the "llvm: the JIT set up" line comes before the program's first
compile (the child sleeps first, then prints a mark); with
TRACEJIT_WARM_UP=0 it comes after the mark, at the first kernel. A process
that forks right after the import (the thread may still be running) gives
children that compile and run llvm kernels correctly (pthread_atfork waits
for the thread: no child inherits a half-made JIT or a held lock), and a
process that exits right after the import exits cleanly."""
import os
import subprocess
import sys

from e2e_util import check, check_equal, finish

LAUNCHER = os.readlink("/proc/self/exe")

ORDER = r"""
import sys, time
import torch
import tracejit
time.sleep(1.0)
print("MARK", file=sys.stderr, flush=True)
f = tracejit.compile(lambda x: (x * 2 + 1).relu(), backend="llvm")
x = torch.randn(64)
assert torch.equal(f(x), (x * 2 + 1).relu())
print("OK", file=sys.stderr, flush=True)
"""

FORK = r"""
import os, signal, sys
import torch
import tracejit
pids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        signal.alarm(120)  # a deadlock fails the test instead of hanging it
        f = tracejit.compile(lambda x: (x * 3 - 1).tanh(), backend="llvm")
        x = torch.randn(32)
        os._exit(0 if torch.allclose(f(x), (x * 3 - 1).tanh()) and tracejit.counters()["graphs_compiled"] == 1 else 3)
    pids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
print("CODES", codes, flush=True)
"""


def run(program, **env):
    full = dict(os.environ, TRACEJIT_LOGS="perf", **env)
    return subprocess.run([LAUNCHER, "-c", program], capture_output=True, text=True, env=full, timeout=300)


def jit_line_before_mark(stderr):
    lines = stderr.splitlines()
    jit = next((i for i, l in enumerate(lines) if "llvm: the JIT set up" in l), None)
    mark = next((i for i, l in enumerate(lines) if l == "MARK"), None)
    return None if jit is None or mark is None else jit < mark


on = run(ORDER)
check(on.returncode == 0 and "OK" in on.stderr, f"with the warm-up thread the program runs ({on.stderr[-300:]})")
check_equal(jit_line_before_mark(on.stderr), True, "the JIT is set up before the first compile (at import)")
off = run(ORDER, TRACEJIT_WARM_UP="0")
check(off.returncode == 0 and "OK" in off.stderr, f"without it the program runs ({off.stderr[-300:]})")
check_equal(jit_line_before_mark(off.stderr), False, "TRACEJIT_WARM_UP=0: the JIT is set up at the first kernel")

forked = run(FORK)
check(forked.returncode == 0, f"the forking parent exits 0 ({forked.stderr[-300:]})")
check_equal(forked.stdout.strip(), "CODES [0, 0, 0]", "children forked right after the import compile and run llvm kernels")

quick = run("import tracejit")
check_equal(quick.returncode, 0, f"a process that exits right after the import exits cleanly ({quick.stderr[-300:]})")
finish()
