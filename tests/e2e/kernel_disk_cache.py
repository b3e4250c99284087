"""The llvm backend's disk kernel cache (issue 12, Deliver 3): the same
program run twice in two processes compiles its kernels once; the second
process only loads them (kernels_compiled 0, kernel_cache_hits > 0) and
gives the same values. A corrupt entry is ignored and rewritten; an
unwritable cache directory only costs the cache."""
import os
import subprocess
import sys
import tempfile

import torch

from e2e_util import check, check_equal, finish

LAUNCHER = os.readlink("/proc/self/exe")
os.environ.pop("TRACEJIT_CACHE_DIR", None)  # it would win over XDG_CACHE_HOME, which this test sets

if len(sys.argv) > 1:  # the child: compile, print counters and a checksum of the values
    import tracejit

    def f(x, y):
        return ((x * y + 1).sin() * 2 - y).relu().exp() + (x > 0).float()

    torch.manual_seed(0)
    x, y = torch.randn(500), torch.randn(500)
    out = tracejit.compile(f, backend="llvm")(x, y)
    c = tracejit.counters()
    ok = torch.allclose(out, f(x, y), rtol=1e-5, atol=1e-6)
    print(f"RESULT {c['kernels_compiled']} {c['kernel_cache_hits']} {ok} {out.double().sum().item():.10e}")
    sys.exit(0)


def child(cache_home):
    env = dict(os.environ, XDG_CACHE_HOME=cache_home)
    got = subprocess.run([LAUNCHER, __file__, "child"], capture_output=True, text=True, env=env, timeout=300)
    line = next((l for l in got.stdout.splitlines() if l.startswith("RESULT")), None)
    check(got.returncode == 0 and line is not None, f"child ran ({got.returncode}: {got.stderr.strip()[-300:]})")
    if line is None:
        return 0, 0, False, ""
    _, compiled, hits, ok, checksum = line.split()
    return int(compiled), int(hits), ok == "True", checksum


home = tempfile.mkdtemp(prefix="tracejit_disk_cache_")
compiled, hits, ok, first_sum = child(home)
check(compiled >= 1 and ok, f"first process compiles its kernels ({compiled} compiled, values ok: {ok})")
entries = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(home, "tracejit")) for f in fs
           if "/graphs-" not in d]  # the graph cache's entries, when it is on
check(len(entries) >= 1 and all(e.endswith(".o") for e in entries), f"entries written under $XDG_CACHE_HOME/tracejit: {entries}")
check(not any(".tmp." in e for e in entries), "no temporary file left behind")

compiled, hits, ok, second_sum = child(home)
check_equal(compiled, 0, "second process compiles nothing")
check(hits >= 1, f"second process hits the disk cache ({hits})")
check(ok and second_sum == first_sum, "second process gives the same values")

for entry in entries:  # corrupt every entry: half of it, then garbage
    data = open(entry, "rb").read()
    open(entry, "wb").write(data[: len(data) // 2] + b"\0garbage")
compiled, hits, ok, third_sum = child(home)
check(compiled >= 1 and ok and third_sum == first_sum, f"corrupt entries are ignored and recompiled ({compiled})")
compiled, hits, ok, _ = child(home)
check(compiled == 0 and hits >= 1 and ok, "the recompiled entries were written back")

unwritable = os.path.join(tempfile.mkdtemp(prefix="tracejit_ro_"), "file")
open(unwritable, "w").close()  # XDG_CACHE_HOME is a file: no directory can be made under it
compiled, hits, ok, _ = child(unwritable)
check(compiled >= 1 and ok, "an unusable cache directory only costs the cache")
# In one process: tracejit.reset() forgets the in-memory kernels and reads
# XDG_CACHE_HOME again, so a reset after a directory change compiles afresh
# and a second reset loads from disk; kernels handed out before still run.
import tracejit  # noqa: E402

tracejit.config.cache_dir = None  # the launcher imported tracejit before the pop above: follow XDG_CACHE_HOME


def g(x):
    return (x.cos() * 3).relu() - 1


x = torch.randn(300)
first = tracejit.compile(g, backend="llvm")
want = first(x)
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="tracejit_reset_")
tracejit.reset()
got = tracejit.compile(g, backend="llvm")(x)
c = tracejit.counters()
check(c["kernels_compiled"] == 1 and c["kernel_cache_hits"] == 0 and torch.equal(got, want),
      f"after reset with a new cache directory the kernel is compiled again ({c})")
tracejit.reset()
got = tracejit.compile(g, backend="llvm")(x)
c = tracejit.counters()
check(c["kernels_compiled"] == 0 and c["kernel_cache_hits"] == 1 and torch.equal(got, want),
      f"after another reset it comes from disk ({c})")
check(torch.equal(first(x), want), "a function compiled before the resets still runs")
finish()
