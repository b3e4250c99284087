"""Our model programs (zoo.py) under tracejit, in inference and as whole
training steps, against eager.

Inference (eval mode, no grad): the compiled function gives eager's values.
Training: three steps of the program's train_step compiled with
tracejit.compile, on three copies of one model: eager float32 (the
reference), compiled float32, eager float64; the compiled losses and final
parameters must be no further from the float64 run than eager's are
(tracejit.same with fp64_ref, TorchDynamo's accuracy rule: an optimizer
turns rounding noise into whole learning-rate steps, so bit equality is not
a property eager has with itself under another kernel).

Graphs and breaks are counted on the first compiled call (explain gives
the reasons of a program that is not one graph). Issue 42's goal is one graph
and no break for every program in both forms; until then a program listed
in ONE_GRAPH must stay one graph (a ratchet: add a program when it gets
there), the others print their counts and first break reasons.

Usage: check_zoo.py PROGRAM... | --all    (under the launcher; the backend
comes from TRACEJIT_TEST_BACKEND, eager by default; ZOO_TRACEBACK=1 raises
what a compiled run raised instead of reporting it). Prints one line per
program and form; exits 1 when a check fails."""
import os
import sys

import torch

import tracejit
from zoo import PROGRAMS

BACKEND = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")

# (program, form) pairs captured as one graph with no break today.
ONE_GRAPH = {
    ("bert", "infer"), ("dcgan", "infer"), ("gpt", "infer"), ("speech_transformer", "infer"), ("unet", "infer"),
    ("vae", "infer"), ("actor_critic", "infer"), ("dlrm", "infer"), ("gcn", "infer"), ("lstm_lm", "infer"),
    # training steps: backward, clipping and the optimizer in the same graph (issue 42, item 3)
    ("gpt", "train"), ("bert", "train"), ("speech_transformer", "train"), ("dlrm", "train"), ("gcn", "train"),
    ("lstm_lm", "train"), ("vae", "train"), ("dcgan", "train"), ("unet", "train"),
    # rewards.tolist() walked in Python, the numbers back into torch.tensor (item() and tolist()
    # traced speculatively with the default config: symbolic_numbers.cpp)
    ("actor_critic", "train"),
}


def to_dtype(value, dtype):
    """value with its floating tensors in dtype (nested lists/tuples too)."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(to_dtype(v, dtype) for v in value)
    return value


def graphs_of(fn, *args):
    ex = tracejit.explain(tracejit.compile(fn, backend=BACKEND))(*args)
    reasons = [f"{os.path.basename(r.filename)}:{r.lineno}: {r.reason[:160]}" for r in ex.break_reasons[:3]]
    return ex.graph_count, ex.graph_break_count, reasons


def counted(call):
    """call()'s result and the graphs compiled and breaks met while it ran.
    A first compiled call traces from scratch as explain() does, and explain
    records a graph or a break exactly where these counters are bumped: the
    same counts, without tracing and compiling the program a second time."""
    before = tracejit.counters()
    result = call()
    after = tracejit.counters()
    return result, tuple(after[k] - before[k] for k in ("graphs_compiled", "graph_breaks"))


def with_reasons(counts, fn, *args):
    """(graphs, breaks, reasons): explain() runs (after a reset) only for the
    reasons of a program that is not one graph."""
    if counts == (1, 0):
        return 1, 0, []
    tracejit.reset()
    return graphs_of(fn, *args)


def close(got, want, what, failures):
    if isinstance(got, (tuple, list)):
        for i, (g, w) in enumerate(zip(got, want)):
            close(g, w, f"{what}[{i}]", failures)
        return
    if not isinstance(got, torch.Tensor):
        return
    if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        diff = (got - want).abs().max().item() if got.shape == want.shape else f"shape {tuple(got.shape)}"
        failures.append(f"{what}: compiled differs from eager (max abs diff {diff})")


def check_infer(name, program, failures):
    model = program.model.eval()
    with torch.no_grad():
        want = program.infer(model, *program.infer_args)
        compiled = tracejit.compile(program.infer, backend=BACKEND)
        got, counts = counted(lambda: compiled(model, *program.infer_args))
        close(got, want, "inference", failures)
        result = with_reasons(counts, program.infer, model, *program.infer_args)
    tracejit.reset()
    return result


def check_train(name, program, failures):
    ref, res = program.make_state(), program.make_state()
    fp64 = program.make_state(torch.float64)
    for s in (ref, res, fp64):
        s[0].train()
    compiled = tracejit.compile(program.train_step, backend=BACKEND)
    ref_losses, res_losses, fp64_losses = [], [], []
    counts = None
    for batch in program.batches:
        ref_losses.append(program.train_step(ref, batch))
        loss, step_counts = counted(lambda: compiled(res, batch))
        counts = counts or step_counts  # the first step's, as explain() of a fresh state counts them
        res_losses.append(loss)
        fp64_losses.append(program.train_step(fp64, to_dtype(batch, torch.float64)))
    ref_params = [p.detach() for p in ref[0].parameters()]
    res_params = [p.detach() for p in res[0].parameters()]
    fp64_params = [p.detach() for p in fp64[0].parameters()]
    if not tracejit.same(ref_losses, res_losses, fp64_ref=fp64_losses):
        failures.append(f"training losses: compiled {[float(torch.as_tensor(l).sum()) for l in res_losses]} vs "
                        f"eager {[float(torch.as_tensor(l).sum()) for l in ref_losses]}")
    if not tracejit.same(ref_params, res_params, fp64_ref=fp64_params):
        worst = max((r - c).abs().max().item() for r, c in zip(ref_params, res_params))
        failures.append(f"parameters after {len(program.batches)} steps differ from eager beyond eager's own error "
                        f"against float64 (max abs diff {worst})")
    result = with_reasons(counts, program.train_step, program.make_state(), program.batches[0])
    tracejit.reset()
    return result


def main():
    names = list(PROGRAMS) if sys.argv[1:] == ["--all"] else sys.argv[1:]
    unknown = [n for n in names if n not in PROGRAMS]
    if not names or unknown:
        print(f"check_zoo.py: unknown program(s) {unknown}; known: {', '.join(PROGRAMS)}", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        for form, check in (("infer", check_infer), ("train", check_train)):
            failures = []
            program = PROGRAMS[name]("test")
            try:
                graphs, breaks, reasons = check(name, program, failures)
            except Exception as e:  # the compiled run raised where eager did not
                if os.environ.get("ZOO_TRACEBACK"):
                    raise
                failures.append(f"raised {type(e).__name__}: {str(e)[:300]}")
                graphs, breaks, reasons = "?", "?", []
            if (name, form) in ONE_GRAPH and (graphs, breaks) != (1, 0):
                failures.append(f"{graphs} graphs and {breaks} breaks, want 1 and 0 (it was one graph before)")
            word = "FAIL" if failures else "ok"
            print(f"{word} {name} {form} ({BACKEND}): {graphs} graph(s), {breaks} break(s)"
                  + "".join(f"\n   break: {r}" for r in reasons)
                  + "".join(f"\n   {f}" for f in failures))
            status |= bool(failures)
            sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
