"""Ctrl-C while tracejit traces or compiles a frame: KeyboardInterrupt is
raised from the frame's call promptly, as python3.11 raises it at its next
instruction (the tracer checks pending signals as it goes, the runtime
between its compile steps), and nothing is left marked: the frame's next
call traces and compiles it again (shared trial sigint_lost_during_trace.py).

A child launcher traces a long unrolled loop; this program sends it SIGINT
shortly after the trace starts."""
import os
import signal
import subprocess
import sys
import time

from e2e_util import BACKEND, check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(HERE, "..", "..", "build")), "tracejit")

CHILD = r'''
import sys, time, torch, tracejit
backend = sys.argv[1]

def body(x):
    for i in range(6000):          # a long trace: an unrolled loop
        x = x * 1.0001 + 0.0001
    return x

def make():
    # the same function as a new code object: traced from scratch
    return type(body)(body.__code__.replace(), body.__globals__)

# How long an uninterrupted trace and compile takes here.
t0 = time.time()
tracejit.compile(make(), backend=backend)(torch.ones(4))
print("FULL %.3f" % (time.time() - t0), flush=True)

f = make()
cf = tracejit.compile(f, backend=backend)
print("READY", flush=True)
t0 = time.time()
try:
    cf(torch.ones(4))
    print("RETURNED %.3f" % (time.time() - t0), flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED %.3f" % (time.time() - t0), flush=True)
before = tracejit.counters()
got = cf(torch.ones(4))
after = tracejit.counters()
want = body(torch.ones(4))
print("AGAIN", torch.allclose(got, want), after["frames_traced"] - before["frames_traced"],
      after["graphs_compiled"] - before["graphs_compiled"], flush=True)
'''

env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
child = subprocess.Popen([LAUNCHER, "-c", CHILD, BACKEND], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
lines = {}
for line in child.stdout:
    word, _, rest = line.strip().partition(" ")
    lines[word] = rest
    if word == "READY":
        time.sleep(0.2)
        os.kill(child.pid, signal.SIGINT)
out, err = child.communicate(timeout=300)
print(lines, err[-2000:] if child.returncode else "")
check(child.returncode == 0, f"the child ran to its end (exit {child.returncode})")
full = float(lines.get("FULL", "0"))
check(full > 1.0, f"an uninterrupted trace and compile takes long enough to interrupt ({full:.2f} s)")
check("INTERRUPTED" in lines, "a SIGINT during the trace raises KeyboardInterrupt from the call")
if "INTERRUPTED" in lines:
    took = float(lines["INTERRUPTED"])
    check(took < 0.2 + full / 2, f"promptly: after {took:.2f} s (a whole trace and compile takes {full:.2f} s)")
again = lines.get("AGAIN", "").split()
check(again[:1] == ["True"], "the next call returns eager's result")
check(again[1:] == ["1", "1"], f"... having traced and compiled the frame again (frames traced, graphs compiled: {again[1:]})")
finish()
