"""Ctrl-C while tracejit traces a frame: KeyboardInterrupt is raised from
the frame's call promptly, as python3.11 raises it at its next instruction
(the tracer checks pending signals as it goes, the runtime between its
compile steps), and nothing is left marked: the frame's next call traces
and compiles it again (shared trial sigint_lost_during_trace.py).

The SIGINT is sent at a fixed time after the call starts, whatever holds
the GIL: a SIGALRM from an interval timer, whose Python handler (run at the
first signal check) sends SIGINT to this process."""
import os
import signal
import time

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def body(x):
    for i in range(6000):  # a long trace: an unrolled loop
        x = x * 1.0001 + 0.0001
    return x


def fresh():
    """The same function as a new code object: traced from scratch."""
    return type(body)(body.__code__.replace(), body.__globals__)


DELAY = 0.03

# How long an uninterrupted trace and compile takes here.
t0 = time.time()
tracejit.compile(fresh(), backend=BACKEND)(torch.ones(4))
full = time.time() - t0
check(full > 2 * DELAY, f"an uninterrupted trace and compile takes long enough to interrupt ({full:.2f} s)")

signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
cf = tracejit.compile(fresh(), backend=BACKEND)
before = tracejit.counters()
outcome = "returned"
t0 = time.time()
try:
    signal.setitimer(signal.ITIMER_REAL, DELAY)
    try:
        cf(torch.ones(4))
        took = time.time() - t0
        time.sleep(0.5)  # where a late KeyboardInterrupt would surface
    except KeyboardInterrupt:
        took = time.time() - t0
        outcome = "raised by the call"
except KeyboardInterrupt:
    outcome = "raised late"
signal.setitimer(signal.ITIMER_REAL, 0)
signal.signal(signal.SIGALRM, signal.SIG_DFL)
check_equal(outcome, "raised by the call", "a SIGINT during the trace raises KeyboardInterrupt from the call")
if outcome == "raised by the call":
    check(took < DELAY + full / 2, f"promptly: after {took:.2f} s (a whole trace and compile takes {full:.2f} s)")
middle = tracejit.counters()
check_equal(middle["graphs_compiled"] - before["graphs_compiled"], 0, "the interrupted call compiled nothing")

got = cf(torch.ones(4))
after = tracejit.counters()
check(torch.allclose(got, body(torch.ones(4))), "the next call returns eager's result")
check_equal((after["frames_traced"] - middle["frames_traced"], after["graphs_compiled"] - middle["graphs_compiled"]),
            (1, 1), "... having traced and compiled the frame again (frames traced, graphs compiled)")
again = tracejit.counters()
cf(torch.ones(4))
check_equal(tracejit.counters()["cache_hits"] - again["cache_hits"], 1, "... and its entry serves the call after")

# A Ctrl-C sent by another thread (threading.Timer, as the shared trial
# does) lands when the tracer first lets go of the GIL, which after a trace
# is the compiler collective's question to torch.distributed: a SIGINT
# handler that runs there raises KeyboardInterrupt from the call, not inside
# a probe that clears it. Made deterministic: is_available itself raises.
import torch.distributed as dist

real_is_available = dist.is_available
def interrupted_once():
    dist.is_available = real_is_available
    raise KeyboardInterrupt
dist.is_available = interrupted_once
outcome = "returned"
try:
    try:
        tracejit.compile(fresh(), backend=BACKEND)(torch.ones(4))
        time.sleep(0.2)  # where a late KeyboardInterrupt would surface
    except KeyboardInterrupt:
        outcome = "raised by the call"
except KeyboardInterrupt:
    outcome = "raised late"
dist.is_available = real_is_available
check_equal(outcome, "raised by the call",
            "a KeyboardInterrupt raised while the runtime asks torch.distributed is raised from the call")
finish()
