"""A torchvision model (random weights, no download) under tracejit: in eval
mode it must be captured as exactly one graph with zero breaks (counted on
the first compiled call; explain gives the reasons when not),
and the compiled model must give eager's values, for other batch sizes
too with one more trace (the batch dim made symbolic).

Usage: check_model.py MODEL_NAME   (run by the launcher; the backend comes
from TRACEJIT_TEST_BACKEND, eager by default)."""
import os
import sys

import torch
import torchvision

import tracejit

BACKEND = os.environ.get("TRACEJIT_TEST_BACKEND", "eager")

# Small inputs keep the suite fast on 2 cores; a few models need more pixels.
INPUT_SIZE = {"vit_b_16": 224, "googlenet": 64, "squeezenet1_0": 64}
EXTRA = {"googlenet": {"aux_logits": False, "init_weights": False}}


def main():
    name = sys.argv[1]
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, **EXTRA.get(name, {})).eval()
    side = INPUT_SIZE.get(name, 64)
    x = torch.randn(2, 3, side, side)
    failures = []
    with torch.no_grad():
        want = model(x)
        compiled = tracejit.compile(model, backend=BACKEND)
        before = tracejit.counters()
        got = compiled(x)
        # The first call traces from scratch, as explain() would: the same
        # counts (explain records a graph or a break where the counter is
        # bumped), without a second trace and compile of the model.
        after = tracejit.counters()
        graphs, breaks = (after[k] - before[k] for k in ("graphs_compiled", "graph_breaks"))
        if graphs != 1 or breaks != 0:
            explained = tracejit.explain(compiled)(x)
            reasons = "\n  ".join(f"{r.filename}:{r.lineno}: {r.reason[:300]}" for r in explained.break_reasons[:5])
            failures.append(f"{graphs} graphs and {breaks} breaks, want 1 and 0:\n  {reasons}")
        got_again = compiled(x)
    for label, value in (("first call", got), ("second call", got_again)):
        if value.shape != want.shape or not torch.allclose(value, want, rtol=1e-4, atol=1e-4):
            diff = (value - want).abs().max().item() if value.shape == want.shape else "shape"
            failures.append(f"{label}: compiled output differs from eager (max abs diff {diff})")
    counters = tracejit.counters()
    if counters["cache_hits"] < 1:
        failures.append(f"the second call did not hit the cache: {counters}")
    # Other batch sizes (dynamic=None): one more trace makes the batch dim symbolic, then no more.
    traced_before = counters["frames_traced"]
    with torch.no_grad():
        for batch in (3, 5):
            xb = torch.randn(batch, 3, side, side)
            value, want = compiled(xb), model(xb)
            if value.shape != want.shape or not torch.allclose(value, want, rtol=1e-4, atol=1e-4):
                failures.append(f"batch {batch}: compiled output differs from eager")
    retraced = tracejit.counters()["frames_traced"] - traced_before
    if retraced > 1:
        failures.append(f"batch sizes 3 and 5 traced {retraced} times (want 1: the batch dim symbolic)")
    if failures:
        print(f"FAIL {name} ({BACKEND}):\n" + "\n".join(failures))
        sys.exit(1)
    print(f"ok {name} ({BACKEND}): 1 graph, 0 breaks, values equal to eager; "
          f"batch sizes 3 and 5: {retraced} more trace")


if __name__ == "__main__":
    main()
