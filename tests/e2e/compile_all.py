"""Run with `tracejit --compile-all`: user functions are traced without
any decorator; standard-library and torch frames are not; results match
the same functions run uncompiled (tracejit.disable)."""
import json

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, finish


def model(x, w):
    h = torch.relu(x @ w)
    return h.sum(dim=0) * 2


def driver(x, w):
    return model(x, w) + 1, json.dumps({"n": 1})


reference = tracejit.disable(driver)
x, w = torch.randn(4, 3), torch.randn(3, 5)
tracejit.reset()
got = driver(x, w)
want = reference(x, w)
check(torch.allclose(got[0], want[0]) and got[1] == want[1], "results match the uncompiled run")
counts = tracejit.counters()
check(counts["graphs_compiled"] >= 1, f"a graph was compiled without any decorator ({counts})")
check_equal(tracejit.config.backend, BACKEND, "--backend reaches tracejit.config.backend")
finish()
