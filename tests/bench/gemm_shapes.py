"""GEMM shapes of the transformer and convnext rows, one thread (issue 41's
"matmuls inside compiled graphs within 10 % of a standalone prepacked oneDNN
primitive"): eager's `F.linear` (ATen: addmm on OpenBLAS), then the same
Linear (+ gelu) as a tracejit-compiled module called under no_grad (llvm: a
frozen weight, a oneDNN inner product step), timed interleaved, best and
median of `--reps`. The standalone primitives (OpenBLAS sgemm, a oneDNN inner
product and matmul with prepacked weights) are tests/bench/gemm_primitives.cpp
(built by hand, see its header); `--primitives PATH` runs that binary on the
same shapes.

  PYTHONPATH=build/python OMP_NUM_THREADS=1 python3.11 tests/bench/gemm_shapes.py [--primitives /tmp/gemm_primitives]
"""
import argparse
import os
import statistics
import subprocess
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import tracejit

# (name, leading dims of x, K, N, gelu)
SHAPES = [
    ("bert fc1 8x128x768 @ 768x3072 +gelu", (8, 128), 768, 3072, True),
    ("bert fc2 8x128x3072 @ 3072x768", (8, 128), 3072, 768, False),
    ("convnext pwconv1 8x56x56x96 @ 96x384 +gelu", (8, 56, 56), 96, 384, True),
    ("convnext pwconv2 8x56x56x384 @ 384x96", (8, 56, 56), 384, 96, False),
    ("convnext s2 pwconv1 8x28x28x192 @ 192x768 +gelu", (8, 28, 28), 192, 768, True),
    ("convnext s2 pwconv2 8x28x28x768 @ 768x192", (8, 28, 28), 768, 192, False),
    ("convnext s3 pwconv1 8x14x14x384 @ 384x1536 +gelu", (8, 14, 14), 384, 1536, True),
    ("convnext s3 pwconv2 8x14x14x1536 @ 1536x384", (8, 14, 14), 1536, 384, False),
    ("convnext s4 pwconv1 8x7x7x768 @ 768x3072 +gelu", (8, 7, 7), 768, 3072, True),
    ("convnext s4 pwconv2 8x7x7x3072 @ 3072x768", (8, 7, 7), 3072, 768, False),
    ("vit qkv 1576x768 @ 768x2304", (8 * 197,), 768, 2304, False),
    ("vit fc1 8x197x768 @ 768x3072 +gelu", (8, 197), 768, 3072, True),
    ("vit fc2 8x197x3072 @ 3072x768", (8, 197), 3072, 768, False),
    ("gpt fc1 8x128x256 @ 256x1024 +gelu", (8, 128), 256, 1024, True),
    ("gpt lm_head 8x128x256 @ 256x2000", (8, 128), 256, 2000, False),
]


class Lin(nn.Module):
    def __init__(self, k, n, gelu):
        super().__init__()
        self.fc, self.gelu = nn.Linear(k, n), gelu

    def forward(self, x):
        y = self.fc(x)
        return F.gelu(y) if self.gelu else y


def best_median(times):
    return min(times) * 1e3, statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--primitives", default="", help="tests/bench/gemm_primitives.cpp built")
    p.add_argument("--only", default="", help="only the shapes whose name contains this")
    p.add_argument("--no-gelu", action="store_true", help="the Linears alone (no gelu after any)")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for name, lead, k, n, gelu in SHAPES:
        if args.only not in name:
            continue
        gelu = gelu and not args.no_gelu
        m = Lin(k, n, gelu).eval()
        x = torch.randn(*lead, k)
        flop = 2.0 * x.numel() * n
        cf = tracejit.compile(m, backend="llvm")
        with torch.no_grad():
            ref = m(x)
            for _ in range(3):
                got = cf(x)
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
        eager, compiled = [], []
        with torch.no_grad():
            for _ in range(args.reps):
                t0 = time.perf_counter()
                m(x)
                eager.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                cf(x)
                compiled.append(time.perf_counter() - t0)
        print(name)
        for label, t in (("eager F.linear%s" % (" + gelu" if gelu else ""), eager), ("tracejit llvm", compiled)):
            b, med = best_median(t)
            print("  %-36s best %8.3f ms  median %8.3f ms  %6.1f GFLOP/s (best)" % (label, b, med, flop / b * 1e-6))
        if args.primitives:
            rows = 1
            for d in lead:
                rows *= d
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            out = subprocess.run([args.primitives, str(rows), str(k), str(n), "gelu" if gelu else "-", str(args.reps)],
                                 env=env, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines()[1:]:
                print("  " + line)


if __name__ == "__main__":
    main()
