"""Issue 17: the compiler collective. Processes started here (gloo over
loopback, build/tracejit each) train a small model with
DistributedDataParallel under tracejit.compile, each rank with a different
batch size on its first step: with 2 and 4 ranks, no deadlock, losses and
parameters equal to an eager DDP run on the same data, the same graphs on
every rank (the dim that differs is dynamic everywhere, no recompile); with
config.compiler_collectives off the first graphs differ between ranks. A
graph break that only rank 0 would take (print) is taken by every rank at
the same place; all_reduce, all_gather and broadcast run in CPython between
graphs, alike on every rank."""
import hashlib
import json
import os
import re
import socket
import subprocess

from e2e_util import BACKEND, check, check_equal, finish

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.readlink("/proc/self/exe")
WORKER = os.path.join(HERE, "distributed", "collective_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def run_ranks(scenario, world, collectives=None):
    """Each rank's JSON result and graph_code/graph_breaks/dynamic log."""
    port = free_port()
    env = dict(os.environ, TRACEJIT_LOGS="graph_code,graph_breaks,dynamic", TRACEJIT_TEST_BACKEND=BACKEND)
    if collectives is not None:
        env["TRACEJIT_COMPILER_COLLECTIVES"] = "1" if collectives else "0"
    procs = [subprocess.Popen([LAUNCHER, WORKER, scenario, str(r), str(world), port], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:  # a deadlock: every rank is stopped
            for q in procs:
                q.kill()
            out, err = p.communicate()
            results.append((None, err))
            continue
        lines = out.strip().splitlines()
        ok = p.returncode == 0 and lines
        results.append((json.loads(lines[-1]) if ok else None, err))
        if not ok:
            print(f"rank exited {p.returncode}:\n{err[-3000:]}")
    return results


def finished(name, results):
    """Whether every rank ran to its end (a deadlock is killed by the timeout)."""
    ok = all(r is not None for r, _ in results)
    check(ok, f"{name}: every rank finished (no deadlock)")
    return ok


META = re.compile(r" : [a-z0-9]+\[[^\]]*\](\{[^}]*\})?")


def graphs(log):
    """The hashes of the graphs a rank compiled, in order, each over the
    graph's text without its metas (sizes) and code name: what must match
    between ranks."""
    out, current = [], None
    for line in log.splitlines():
        if line.startswith("[tracejit:graph_code] graph for "):
            current = []
            out.append(current)
        elif line.startswith("[tracejit:"):
            current = None
        elif current is not None and line.strip():
            current.append(META.sub("", line))
    return [hashlib.sha256("\n".join(g).encode()).hexdigest()[:16] for g in out]


def check_ddp(world):
    results = run_ranks("ddp", world)
    if not finished(f"{world} ranks", results):
        return
    for r, _ in results:
        close = all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(r["losses"], r["eager_losses"]))
        check(close and len(r["losses"]) == 20, f"{world} ranks: rank {r['rank']}'s 20 losses equal eager DDP's")
        check(r["params_equal"], f"{world} ranks: rank {r['rank']}'s parameters equal eager DDP's")
        check_equal(r["counters"]["recompiles"], 0, f"{world} ranks: rank {r['rank']} never recompiles over 20 sizes")
    dumps = [graphs(log) for _, log in results]
    check(len(dumps[0]) > 0 and all(d == dumps[0] for d in dumps),
          f"{world} ranks: the same graph hashes on every rank ({dumps[0]})")
    check(all("differs between ranks or is dynamic on one (compiler collective)" in log for _, log in results),
          f"{world} ranks: the dynamic log names the dim that differs between ranks")
    return dumps[0]


check_ddp(2)
check_ddp(4)

off = run_ranks("ddp", 2, collectives=False)
if finished("collectives off", off):
    first = [graphs(log)[0] for _, log in off]
    check(first[0] != first[1], "collectives off: the first graphs differ between ranks (each rank's batch size)")
    check(all(r["counters"]["recompiles"] > 0 for r, _ in off), "collectives off: each rank recompiles")

broke = run_ranks("break", 2)
if finished("break", broke):
    for r, log in broke:
        check(r["values_ok"], f"break: rank {r['rank']}'s values as eager")
        check_equal((r["counters"]["graph_breaks"], r["counters"]["graphs_compiled"]), (1, 2),
                    f"break: rank {r['rank']} breaks once, two graphs")
    check("rank 0 breaks the graph here (compiler collective): " in broke[1][1],
          "break: rank 1's break names rank 0's")
    dumps = [graphs(log) for _, log in broke]
    check(dumps[0] == dumps[1], "break: the same graphs on both ranks")

comm = run_ranks("collectives", 2)
if finished("all_reduce/all_gather/broadcast", comm):
    for r, log in comm:
        check(r["values_ok"], f"all_reduce/all_gather/broadcast: rank {r['rank']}'s values as eager")
        check_equal(r["counters"]["graph_breaks"], 3, f"all_reduce/all_gather/broadcast: rank {r['rank']} breaks at each")
        check(all(f"{name}" in log for name in ("all_reduce", "all_gather", "broadcast")),
              f"all_reduce/all_gather/broadcast: rank {r['rank']}'s break reasons name them")
    dumps = [graphs(log) for _, log in comm]
    check(dumps[0] == dumps[1] and len(dumps[0]) == 4, "all_reduce/all_gather/broadcast: the same 4 graphs on both ranks")

# Only rank 1 reaches a break (a size-dependent branch), so rank 0 cannot
# break there: after the second gather both run the frame uncompiled. And a
# recompile on one rank (its own new size) runs no collective, nor does the
# resume function it makes.
for scenario in ("sizebranch", "recompile"):
    ranks = run_ranks(scenario, 2)
    if not finished(scenario, ranks):
        continue
    check(all(r["values_ok"] for r, _ in ranks), f"{scenario}: values as eager on every rank")
    if scenario == "sizebranch":
        check(all("the ranks' traces differ even after the compiler collective" in log for _, log in ranks),
              "sizebranch: both ranks say why the frame runs uncompiled")

# Ranks that first compile different functions: a warning, those frames
# uncompiled, the collective off; no hang, eager's values.
order = run_ranks("order", 2)
if finished("order", order):
    check(all(r["values_ok"] for r, _ in order), "order: values as eager on every rank")
    check(all("the compiler collective paired different frames" in log for _, log in order),
          "order: every rank warns that the collective paired different frames")

# mark_dynamic on rank 0 only, equal sizes: the dim is dynamic on every rank.
marked = run_ranks("marked", 2)
if finished("mark_dynamic on one rank", marked):
    check(all(r["values_ok"] for r, _ in marked), "mark_dynamic on one rank: values as eager")
    dumps = [graphs(log) for _, log in marked]
    check(dumps[0] == dumps[1] and len(dumps[0]) == 1, "mark_dynamic on one rank: the same graph hash on both ranks")
    check("L['x'] dim 0 differs between ranks or is dynamic on one" in marked[1][1],
          "mark_dynamic on one rank: rank 1's dynamic log names the dim rank 0 marked")
    check_equal([r["counters"]["recompiles"] for r, _ in marked], [0, 0],
                "mark_dynamic on one rank: neither rank recompiles for other sizes")

# Duck sizing: sizes equal on rank 0 only stay two symbols on both ranks
# (one shared symbol there would make the ranks' graphs differ, and the
# frame would run uncompiled everywhere).
duck = run_ranks("duck", 2)
if finished("duck sizing", duck):
    check(all(r["values_ok"] for r, _ in duck), "duck sizing: values as eager on every rank")
    dumps = [graphs(log) for _, log in duck]
    check(dumps[0] == dumps[1] and len(dumps[0]) == 1, "duck sizing: one graph, the same hash on both ranks")
    check(not any("the ranks' traces differ" in log for _, log in duck), "duck sizing: the frame is compiled")
    check_equal([r["counters"]["recompiles"] for r, _ in duck], [0, 0],
                "duck sizing: neither rank recompiles when its sizes stop coinciding")

alone = run_ranks("break", 2, collectives=False)
if finished("collectives off, break", alone):
    check_equal([r["counters"]["graph_breaks"] for r, _ in alone], [1, 0],
                "collectives off: only rank 0 breaks (what the collective aligns)")
finish()
