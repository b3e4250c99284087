"""Where a compiled inference call's time goes (issue 41): a row of
`scripts/bench --models` (tests/bench/models.py's `make`) compiled with the
llvm backend, three warm-up calls, then torch.profiler around two calls;
self CPU time by step class (oneDNN reorders, conv primitives, poolings,
llvm kernels, `cat`, copies; the rest by name), as shares of the profiled
call (profiling inflates every step alike).

Usage (one thread, as the bench's rows):
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/tracejit tests/bench/profile_conv.py densenet121 efficientnet_b0
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CLASSES = [("reorders", ("tj::onednn reorder", "tj::onednn residual reorder")),
           ("conv primitives", ("tj::onednn conv primitive",)),
           ("pool", ("tj::onednn pool",)),
           ("llvm kernels", ("tj::kernel",)),
           ("cat", ("aten::cat", "aten::_cat")),
           ("copies", ("aten::copy_",))]


def main():
    import torch
    from torch.profiler import profile
    import models
    torch.set_num_threads(1)
    for key in sys.argv[1:]:
        _, compiled = models.make(key)
        run = compiled("llvm")
        for _ in range(3):
            run()
        with profile() as prof:
            run()
            run()
        time, count = collections.Counter(), collections.Counter()
        total = 0.0
        for e in prof.events():
            total += e.self_cpu_time_total
            name = next((c for c, prefixes in CLASSES if e.name.startswith(prefixes)), "other: " + e.name[:40])
            time[name] += e.self_cpu_time_total
            count[name] += 1
        print(f"== {key}: {total / 2e3:.1f} ms per profiled call")
        for name, t in time.most_common(12):
            print(f"   {name:48s} {100 * t / total:5.1f} %  ({count[name] / 2:g} per call)")


if __name__ == "__main__":
    main()
