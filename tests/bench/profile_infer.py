"""Where an inference call's time goes, eager against compiled (issue 41):
one `scripts/bench --models` inference row (vit_b_16, gpt_infer,
bert_infer, ...) under torch.profiler, per op class, self CPU time per call.

Classes: linears (addmm/mm/linear; compiled: the oneDNN linear steps),
attention matmuls (bmm/baddbmm; compiled: the oneDNN matmul steps),
layer_norm, softmax, gelu, copies (clone/copy_/contiguous), other pointwise
ATen ops, embeddings, tracejit's llvm kernels by what they compute (a
kernel's name lists its ops: one with a layer norm is "layer_norm", then
softmax, gelu; the rest "other fused kernels"), and what no op accounts
for (Python, dispatch, tracejit's runtime). An event's class is that of
the outermost classified event above it (a oneDNN step's ATen calls are
the step's).

Usage (one thread, as the bench's rows):
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python \\
    python3.11 tests/bench/profile_infer.py [vit_b_16 gpt_infer bert_infer] [--calls 1]
"""
import argparse
import os
import sys

from profile_rows import print_other_rows

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LINEAR_OPS = {"aten::addmm", "aten::mm", "aten::linear", "aten::_addmm_activation"}
ATTN_MM_OPS = {"aten::bmm", "aten::baddbmm", "aten::matmul"}
COPY_OPS = {"aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to"}
POINTWISE = {"aten::add", "aten::mul", "aten::div", "aten::masked_fill", "aten::masked_fill_", "aten::add_",
             "aten::mul_", "aten::div_", "aten::eq", "aten::rsub", "aten::sub", "aten::where"}
NAMED = {"aten::native_layer_norm": "layer_norm", "aten::layer_norm": "layer_norm",
         "aten::_softmax": "softmax", "aten::softmax": "softmax", "aten::gelu": "gelu",
         "aten::embedding": "embedding", "aten::index_select": "embedding",
         "aten::_log_softmax": "softmax"}


def kernel_class(name):
    if "layer_norm" in name or "var_mean" in name:
        return "llvm kernels: layer_norm"
    if "softmax" in name:
        return "llvm kernels: softmax"
    if "gelu" in name:
        return "llvm kernels: gelu"
    return "llvm kernels: other"


def classify(chain):
    """chain: event names from the root down to the event itself."""
    for n in chain:
        if n == "tj::onednn linear step":
            return "linears"
        if n == "tj::onednn matmul step":
            return "attention matmuls"
        if n.startswith("tj::onednn conv"):
            return "convolutions"
        if n.startswith("tj::kernel "):
            return kernel_class(n[len("tj::kernel "):])
    name = chain[-1]
    if name in LINEAR_OPS:
        return "linears"
    if name in ATTN_MM_OPS:
        return "attention matmuls"
    if name in ("aten::mkldnn_convolution", "aten::convolution", "aten::_convolution", "aten::conv2d"):
        return "convolutions"
    if name in COPY_OPS:
        return "copies"
    if name in NAMED:
        return NAMED[name]
    if name in POINTWISE:
        return "pointwise ATen"
    if name.startswith("aten::") or name.startswith("tj::"):
        return "other: " + name
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="*", default=["vit_b_16", "gpt_infer", "bert_infer"])
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--others", type=int, default=4)
    args = ap.parse_args()
    import torch
    import profile_steps
    import models
    profile_steps.classify = classify  # the same profiler walk, this file's classes
    torch.set_num_threads(1)
    for key in args.rows:
        eager, compiled_of = models.make(key)
        compiled = compiled_of(args.backend)
        for _ in range(2):
            eager()
            compiled()
        we, pe, _ = profile_steps.profile(eager, args.calls)
        wc, pc, _ = profile_steps.profile(compiled, args.calls)
        print(f"\n{key}: ms per call (self CPU time), {args.calls} call(s), eager / compiled")
        print("| class | eager | compiled |\n| --- | --- | --- |")
        main_classes = ["linears", "attention matmuls", "convolutions", "layer_norm", "softmax", "gelu", "copies",
                        "pointwise ATen", "embedding"]
        main_classes += sorted(k for k in set(pe) | set(pc) if k.startswith("llvm kernels"))
        for cls in main_classes:
            if pe.get(cls, 0) or pc.get(cls, 0):
                print(f"| {cls} | {pe.get(cls, 0.0):.1f} | {pc.get(cls, 0.0):.1f} |")
        print_other_rows(pe, pc, "other: ", args.others)
        print(f"| not in an op (Python, dispatch, runtime) | {we - sum(pe.values()):.1f} | "
              f"{wc - sum(pc.values()):.1f} |")
        print(f"| wall (profiled) | {we:.1f} | {wc:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
