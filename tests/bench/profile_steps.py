"""Where a training step's time goes, eager against compiled (issue 41
item 3): one zoo training step (tests/models/zoo.py, the "bench" sizes of
`scripts/bench --models`) under torch.profiler, per op class, self CPU
time per step.

Classes: forward / backward convolutions and matmuls, tracejit's fused
llvm kernels (`tj::kernel ...`), the optimizer's update, copies, the other
ATen ops (the largest named), and what no ATen op or kernel accounts for
(Python, dispatch, tracejit's runtime). An event's class comes from the
outermost classified event above it: ops under an autograd node
(`autograd::engine::evaluate_function: ...`) are the backward, ops under
`Optimizer.step#...` the optimizer, the ATen calls inside a
`tj::transposed conv forward|backward` step that step's. A compiled step
is one graph with its backward traced inside: its matmuls are not split
into forward and backward (the column says "fwd+bwd"), and its optimizer
update is the llvm kernels whose names show Adam's/SGD's arithmetic
(`sqrt` and `addcmul`, or `lerp`), an approximation stated in the output.

With --top N: also the N costliest calls of each step by op name and input
shapes (a kernel by its name), self CPU time per step with the per-call
minimum and median: on a loaded host a preempted call inflates the sum,
the minimum shows what the call costs.

With --memory: instead of times, the bytes LibTorch's CPU allocator holds
during one step over what it held when the step began (the profiler's
memory events, `profile_memory=True`: tensors only, not oneDNN's or
OpenBLAS's own buffers nor glibc's fragmentation, but free of the RSS
measure's noise), eager against compiled, with the op running at each
peak, and with --timeline the live MiB after every top-level op.

Usage (one thread, as the bench's rows):
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python \\
    python3.11 tests/bench/profile_steps.py [gpt dcgan vae lstm_lm] [--steps 2] [--top N]
    [--memory [--timeline]]
"""
import argparse
import collections
import os
import sys
import time

from profile_rows import print_other_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CONV_OPS = {"aten::mkldnn_convolution", "aten::slow_conv_transpose2d", "aten::thnn_conv2d",
            "aten::_slow_conv2d_forward", "aten::slow_conv_dilated2d", "aten::_convolution",
            "aten::convolution", "aten::conv2d", "aten::conv_transpose2d"}
CONV_BWD_OPS = {"aten::convolution_backward", "aten::mkldnn_convolution_backward",
                "aten::slow_conv_transpose2d_backward", "aten::_slow_conv2d_backward",
                "aten::mkldnn_convolution_backward_input", "aten::mkldnn_convolution_backward_weights"}
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
              "aten::_addmm_activation"}
COPY_OPS = {"aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to"}


def classify(chain):
    """chain: event names from the root down to the event itself."""
    name = chain[-1]
    backward = any(n.startswith("autograd::engine::evaluate_function") for n in chain)
    if any(n.startswith("Optimizer.step") or n.startswith("Optimizer.zero_grad") for n in chain):
        return "optimizer update"
    for n in chain:
        if n == "tj::transposed conv forward":
            return "conv forward"
        if n == "tj::transposed conv backward":
            return "conv backward"
        if n.startswith("tj::onednn conv") or n == "tj::onednn reorder" or n == "tj::onednn residual reorder":
            return "conv forward (oneDNN step)"
        if n.startswith("tj::onednn inner product") or n.startswith("tj::onednn matmul"):
            return "matmul (oneDNN step)"
        if n.startswith("tj::kernel "):
            k = n[len("tj::kernel "):]
            if ("sqrt" in k and "addcmul" in k) or "lerp" in k:
                return "optimizer update"
            return "fused llvm kernels"
    if name in CONV_BWD_OPS:
        return "conv backward"
    if name in CONV_OPS:
        return "conv backward" if backward else "conv forward"
    if name in MATMUL_OPS:
        return "matmul backward" if backward else "matmul forward"
    if name in COPY_OPS:
        return "copies"
    if name.startswith("aten::") or name.startswith("tj::"):
        return "other ATen: " + name
    return None  # a record-function frame (its self time: Python, dispatch, the runtime)


def profile(step, steps, shapes=False):
    import torch
    from torch.profiler import profile as tprofile, ProfilerActivity
    with tprofile(activities=[ProfilerActivity.CPU], record_shapes=shapes) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        wall = (time.perf_counter() - t0) / steps
    events = prof.events()
    per = collections.Counter()
    calls = collections.defaultdict(list)  # (name, input shapes) -> self ms of each call
    for e in events:
        if shapes and (e.name.startswith("aten::") or e.name.startswith("tj::")):
            key = e.name if e.name.startswith("tj::kernel") else f"{e.name} {e.input_shapes}"
            calls[key].append(e.self_cpu_time_total / 1e3)
        chain = []
        p = e
        while p is not None:
            chain.append(p.name)
            p = p.cpu_parent
        chain.reverse()
        cls = classify(chain)
        if cls is None:
            continue
        per[cls] += e.self_cpu_time_total / 1e3 / steps  # ms per step
    del torch
    return wall * 1e3, per, calls


def print_top(label, calls, steps, top):
    """The `top` costliest calls by name and shapes: ms per step, calls per step, per-call min / median."""
    print(f"{label}: the {top} costliest calls (self ms per step; calls per step; per call min / median)")
    rows = sorted(calls.items(), key=lambda kv: -sum(kv[1]))[:top]
    for key, ts in rows:
        ts = sorted(ts)
        print(f"  {sum(ts) / steps:8.2f}  x{len(ts) / steps:<6g} {ts[0]:7.3f} / {ts[len(ts) // 2]:7.3f}  {key[:140]}")


def step_memory(step):
    """(peak bytes over the start, the op running at the peak, timeline) of one step."""
    from torch.profiler import profile as tprofile, ProfilerActivity
    with tprofile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = prof.profiler.kineto_results.events()
    mem = [(e.start_us(), e.nbytes()) for e in events if e.name() == "[memory]"]
    ops = sorted((e.start_us(), e.start_us() + e.duration_us(), e.name()) for e in events if e.name() != "[memory]")
    live = peak = 0
    at = None
    for t, nbytes in mem:
        live += nbytes
        if live > peak:
            peak, at = live, t
    top, end = [], -1  # the outermost ops, in order
    for s, e, name in ops:
        if s >= end:
            top.append((s, e, name))
            end = e
    where = next((n for s, e, n in top if at is not None and s <= at <= e), "-")
    timeline, live, i = [], 0, 0
    for s, e, name in top:
        while i < len(mem) and mem[i][0] <= e:
            live += mem[i][1]
            i += 1
        timeline.append((name, live))
    return peak, where, timeline


def memory_rows(prog, eager_step, compiled_step, timeline):
    name = prog
    pe, we, te = step_memory(eager_step)
    pc, wc, tc = step_memory(compiled_step)
    print(f"{name}_train: allocator peak over the step's start: eager {pe / 2**20:.1f} MiB (at {we}), "
          f"compiled {pc / 2**20:.1f} MiB (at {wc}), ratio {pc / max(pe, 1):.2f}x")
    if timeline:
        for label, t in (("eager", te), ("compiled", tc)):
            print(f"  {label}: " + " | ".join(f"{n.replace('aten::', '')[:24]} {b / 2**20:.1f}" for n, b in t))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="*", default=["gpt", "vae", "dcgan", "lstm_lm"])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--others", type=int, default=4, help="how many other ATen ops to name")
    ap.add_argument("--top", type=int, default=0, help="also list the N costliest calls by name and shapes")
    ap.add_argument("--memory", action="store_true", help="the allocator's peak over one step instead of times")
    ap.add_argument("--timeline", action="store_true", help="with --memory: live MiB after every top-level op")
    args = ap.parse_args()
    import torch
    import tracejit
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    from zoo import PROGRAMS
    for program in args.programs:
        prog = PROGRAMS[program]("bench")
        eager_state, compiled_state = prog.make_state(), prog.make_state()
        batch = prog.batches[0]
        compiled = tracejit.compile(prog.train_step, backend=args.backend)
        for _ in range(3):
            prog.train_step(eager_state, batch)
            compiled(compiled_state, batch)
        if args.memory:
            memory_rows(program, lambda: prog.train_step(eager_state, batch),
                        lambda: compiled(compiled_state, batch), args.timeline)
            continue
        we, pe, ce = profile(lambda: prog.train_step(eager_state, batch), args.steps, args.top > 0)
        wc, pc, cc = profile(lambda: compiled(compiled_state, batch), args.steps, args.top > 0)
        print(f"\n{program}_train: ms per step (self CPU time), {args.steps} steps, eager / compiled")
        print(f"| class | eager | compiled |\n| --- | --- | --- |")
        for d in (pe, pc):  # a compiled step's matmuls have no autograd node: one row for both halves
            d["matmul fwd+bwd"] = d.pop("matmul forward", 0.0) + d.get("matmul backward", 0.0)
        main_classes = ["conv forward", "conv forward (oneDNN step)", "conv backward", "matmul fwd+bwd",
                        "matmul backward", "matmul (oneDNN step)", "fused llvm kernels", "optimizer update",
                        "copies"]
        for cls in main_classes:
            if pe.get(cls, 0) or pc.get(cls, 0):
                e, c = pe.get(cls, 0.0), pc.get(cls, 0.0)
                if cls == "matmul backward":  # eager's part of the row above
                    print(f"| (of which under an autograd node) | {e:.1f} | - |")
                    continue
                print(f"| {cls} | {e:.1f} | {c:.1f} |")
        print_other_rows(pe, pc, "other ATen: ", args.others)
        accounted_e = sum(v for k, v in pe.items() if k != "matmul backward")
        accounted_c = sum(v for k, v in pc.items() if k != "matmul backward")
        print(f"| not in an op (Python, dispatch, runtime) | {we - accounted_e:.1f} | {wc - accounted_c:.1f} |")
        print(f"| wall (profiled) | {we:.1f} | {wc:.1f} |")
        if args.top:
            print_top(f"{program}_train eager", ce, args.steps, args.top)
            print_top(f"{program}_train compiled", cc, args.steps, args.top)
        sys.stdout.flush()
    if not args.memory:
        print("\n(a compiled step's 'optimizer update' is its llvm kernels named with sqrt+addcmul or lerp)")


if __name__ == "__main__":
    main()
