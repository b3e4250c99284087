"""The bench machinery end to end, fast (suite `bench`): runs bench.py
--quick --self-check-only under the launcher and fails when it exits
non-zero (the self-check failed), when its printed report or its --json
file lose their shape, or when a twin made to do twice the work
(--debug-skew-twin 2) does not make the self-check fail, or when `--only
costs` (no backends compared) does not exit 0. It asserts no
speed-up: only that the numbers are there and the method can see itself
break. Usage: check_bench.py build/tracejit tests/bench/bench.py
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TRACEJIT, BENCH = sys.argv[1], sys.argv[2]
CORE = ["pointwise8", "tiny30", "train_mlp"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    out = subprocess.run([TRACEJIT, BENCH, *args], capture_output=True, text=True, timeout=240)
    return out.returncode, out.stdout, out.stderr


TIME = r"[0-9.]+ (?:us|ms|s)"
ROW = re.compile(rf"^   (\S.{{21}}) +({TIME}) +[0-9]+% +(-?[0-9.]+)x +(\S+) +([0-9]+)(.*)$")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "bench.json")
    rc, out, err = run("--quick", "--self-check-only", "--json", path)
    print(out)
    check(rc == 0, f"bench --quick --self-check-only exits 0 (got {rc}; stderr: {err[-1500:]})")
    lines = out.splitlines()
    check(any(line.startswith("method: contenders interleaved round-robin") for line in lines), "method line printed")
    check(any(re.match(r"copy_ of 2\^22 float32: .* GB/s", line) for line in lines), "copy_ bandwidth printed")
    for key in CORE:
        check(any(line.startswith(f"== {key}: ") for line in lines), f"workload {key} reported")
    rows = [ROW.match(line) for line in lines]
    names = {m.group(1).strip() for m in rows if m}
    for name in ("eager PyTorch", "eager PyTorch (twin)", "eager", "aot_eager", "aot_eager (twin)"):
        check(name in names, f"a row for {name!r}")
    check(len([m for m in rows if m]) >= 6 * len(CORE), "one row per contender and workload")
    pairs = [line for line in lines if line.startswith("   self-check: ")]
    check(len(pairs) >= 2 * len(CORE) and all(re.match(r"   self-check: .* vs .*: [0-9.]+% \(ok, limit 10%\)", p) for p in pairs),
          "at least two self-check pairs per workload (the twins), each ok")
    check(sum(1 for p in pairs if "(twin) vs" in p) == 2 * len(CORE), "both twins in every workload")
    check(any(re.match(r"  pointwise8 +llvm +ratio +[0-9.]+x +goal >=4x +\(issue 12\) +(met|MISS)", line) for line in lines),
          "pointwise8's llvm goal shown with its status")
    check(any(re.match(r"  train_mlp +aot_eager +ratio .*\(issue +9\)", line) for line in lines),
          "the training step's aot_eager goal (issue 9) shown")
    check(any(line.startswith("   saved for backward (aot_eager): ") for line in lines), "saved bytes of the MLP step")
    check(lines and re.match(r"self-check: ok \([0-9]+ identical pairs", lines[-1]) is not None, "final self-check line")

    with open(path) as f:
        data = json.load(f)
    check(data["self_check"]["ok"] is True, "json: self_check ok")
    check([w["key"] for w in data["workloads"]] == CORE, "json: the core workloads")
    for w in data["workloads"]:
        cs = w["contenders"]
        check(all(c["median_s"] > 0 and len(c["samples_s"]) >= 9 for c in cs.values()),
              f"json: {w['key']}: a positive median over >= 9 samples per contender")
        check(all(b in w["compile"] and "cold_ms" in w["compile"][b] for b in data["backends"]),
              f"json: {w['key']}: compile latency per backend")
    pw = data["workloads"][0]
    check(pw["bytes_moved"] == 3 * (1 << 24) and pw["copy_bound_s"] > 0, "json: pointwise8 bytes moved and copy bound")

    rc, out, _ = run("--quick", "--only", "tiny30", "--backends", "aot_eager", "--debug-skew-twin", "2")
    check(rc == 1 and "self-check: FAIL" in out, f"a twin doing twice the work fails the self-check (exit {rc})")
    check(re.search(r"self-check: aot_eager \(twin\) vs aot_eager: [0-9.]+% \(FAIL, limit 10%\) after 2 more measurement", out)
          is not None, "the failing pair is measured twice more and fails each time")

    rc, out, _ = run("--quick", "--only", "costs")
    check(rc == 0 and "self-check: none" in out and re.search(r"cache hit, 4 tensor inputs: [0-9.]+ us", out) is not None,
          f"--only costs runs the costs, has no pair to check and exits 0 (exit {rc})")

    rc, _, err = run("--only", "no_such_workload")
    check(rc == 2 and "unknown workload" in err, "an unknown workload is an error")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("bench machinery ok")
