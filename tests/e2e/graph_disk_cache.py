"""The graph cache (issue 44, warm start): a second process that traces the
same graphs takes AOT's results from disk (graph_cache_hits) and its kernels
from the kernel cache: it captures nothing (aot_captures 0) and compiles no
kernel (kernels_compiled 0), for an MLP's training step and a small CNN's
inference, and gives the same values. Corrupt entries are ignored (a `perf`
line says so) and written again; two processes writing at once leave only
whole entries; TRACEJIT_GRAPH_CACHE=0 turns it off; TRACEJIT_CACHE_DIR says
where it lives. Counters are asserted, not times."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from e2e_util import check, check_equal, finish

LAUNCHER = os.readlink("/proc/self/exe")

if len(sys.argv) > 1:  # the child: a training step and an inference, then counters and values
    import torch.nn as nn
    import torch.nn.functional as F

    import tracejit

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    opt = torch.optim.SGD(mlp.parameters(), lr=0.1)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(mlp(x), y)
        loss.backward()
        opt.step()
        return loss

    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(8 * 4 * 4, 5)).eval()
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    step = tracejit.compile(train_step)
    losses = [step(x, y).item() for _ in range(3)]
    with torch.no_grad():
        logits = tracejit.compile(cnn)(torch.randn(2, 3, 8, 8))
    c = tracejit.counters()
    print("RESULT " + json.dumps({"aot_captures": c["aot_captures"], "graph_cache_hits": c["graph_cache_hits"],
                                  "kernels_compiled": c["kernels_compiled"], "graphs_compiled": c["graphs_compiled"],
                                  "values": [round(v, 6) for v in losses] + [round(logits.sum().item(), 5)],
                                  "params": round(sum(p.sum().item() for p in mlp.parameters()), 5)}))
    sys.exit(0)


def start(cache_dir, **env):
    e = dict(os.environ, TRACEJIT_CACHE_DIR=cache_dir, TRACEJIT_GRAPH_CACHE="1")
    e.update(env)
    return subprocess.Popen([LAUNCHER, "--log", "perf", __file__, "child"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e)


def result(proc):
    out, err = proc.communicate(timeout=600)
    line = next((l for l in out.splitlines() if l.startswith("RESULT ")), None)
    check(proc.returncode == 0 and line is not None, f"child ran ({proc.returncode}: {err.strip()[-400:]})")
    return (json.loads(line[len("RESULT "):]) if line else {}), err


def child(cache_dir, **env):
    return result(start(cache_dir, **env))


cache = tempfile.mkdtemp(prefix="tracejit_graph_cache_")
cold, _ = child(cache)
# A graph compiled again in the same process (a recompile that traces the
# same graph) is a hit already: the first process's AOT compiles are its
# captures and those hits.
captures, hits = cold.get("aot_captures", 0), cold.get("graph_cache_hits", 0)
aot_compiles = captures + hits
check(captures >= 2, f"the first process captures its graphs ({cold})")
graph_entries = glob.glob(os.path.join(cache, "graphs-*", "*.bin"))
check(len(graph_entries) == captures, f"one graph entry per capture under TRACEJIT_CACHE_DIR ({graph_entries})")
check(glob.glob(os.path.join(cache, "kernels-*", "*.o")) != [], "kernels written beside them")

warm, err = child(cache)
check_equal(warm.get("aot_captures"), 0, "the second process makes no AOT capture")
check_equal(warm.get("kernels_compiled"), 0, "the second process compiles no kernel")
check_equal(warm.get("graph_cache_hits"), aot_compiles, "every AOT compile is a hit of the graph cache")
check_equal(warm.get("graphs_compiled"), cold.get("graphs_compiled"), "the same graphs compiled")
check_equal((warm.get("values"), warm.get("params")), (cold.get("values"), cold.get("params")),
            "the same losses, parameters and logits")
check("graph cache: AOT's graphs for" in err, "the perf log names the hits")

for entry in graph_entries:  # corrupt every graph entry
    data = open(entry, "rb").read()
    open(entry, "wb").write(data[: len(data) // 2] + b"\0garbage")
corrupt, err = child(cache)
check((corrupt.get("aot_captures"), corrupt.get("graph_cache_hits")) == (captures, hits),
      f"corrupt entries are ignored: everything captured again ({corrupt})")
check("disk cache: ignoring a corrupt or truncated entry" in err, "a perf line says why")
check_equal(corrupt.get("values"), cold.get("values"), "the same values after ignoring them")
again, _ = child(cache)
check_equal((again.get("aot_captures"), again.get("graph_cache_hits")), (0, aot_compiles),
            "the entries were written back")

off, _ = child(cache, TRACEJIT_GRAPH_CACHE="0")
check_equal((off.get("aot_captures"), off.get("graph_cache_hits")), (aot_compiles, 0),
            "TRACEJIT_GRAPH_CACHE=0 turns it off")

# Two processes at once on an empty cache (two DDP ranks): both run, every
# entry is whole, and a third process takes everything from disk.
shared = tempfile.mkdtemp(prefix="tracejit_graph_cache_two_")
procs = [start(shared), start(shared)]
results = [result(p)[0] for p in procs]
check(all(r.get("values") == cold.get("values") for r in results), "two writers at once both run correctly")
check(glob.glob(os.path.join(shared, "*", "*.tmp.*")) == [], "no temporary file left behind")
third, _ = child(shared)
check_equal((third.get("aot_captures"), third.get("kernels_compiled")), (0, 0),
            "after two writers a third process finds every entry whole")
for d in (cache, shared):
    shutil.rmtree(d, ignore_errors=True)
finish()
