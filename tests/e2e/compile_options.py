"""tracejit.compile's torch.compile options and module copies (issue 18,
items 23 and 25): mode= takes torch.compile's modes (tracejit.MODES says
what each means), options= is checked, help() shows real defaults, and
copy.deepcopy / copy.copy of a compiled module is a copy compiled anew."""
import copy
import inspect
import pydoc

import torch

import tracejit
from e2e_util import BACKEND, check, check_equal, check_raises, finish


def f(x):
    return x * 2 + 1


x = torch.randn(3)
for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
    check(mode in tracejit.MODES and isinstance(tracejit.MODES[mode], str), f"tracejit.MODES documents {mode!r}")
    compiled = tracejit.compile(f, backend=BACKEND, mode=mode)
    check(torch.equal(compiled(x), f(x)), f"mode={mode!r} compiles")
check_raises(ValueError, lambda: tracejit.compile(f, mode="fastest"), "an unknown mode raises ValueError")
check_raises(ValueError, lambda: tracejit.compile(f, mode="default", options={}), "mode and options together raise")
check(torch.equal(tracejit.compile(f, backend=BACKEND, options={})(x), f(x)), "options={} is accepted")
check_raises(ValueError, lambda: tracejit.compile(f, options={"triton.cudagraphs": True}), "an unknown option raises")
check_raises(TypeError, lambda: tracejit.compile(f, options=["x"]), "options must be a dict")
check(tracejit.compile(f, disable=True) is f, "disable=True returns fn itself")
check(torch.equal(tracejit.compile(mode="max-autotune", backend=BACKEND)(f)(x), f(x)), "@compile(mode=...) decorator")

sig = inspect.signature(tracejit.compile)
check_equal({k: p.default for k, p in sig.parameters.items() if k != "fn"},
            {"backend": None, "fullgraph": False, "dynamic": None, "mode": None, "options": None, "disable": False},
            "compile's signature has real defaults")
text = pydoc.render_doc(tracejit.compile)
check("<object object" not in text and "mode" in text and "reduce-overhead" in text, "help(tracejit.compile) is readable")

# --- copy.deepcopy / copy.copy of a compiled module
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
compiled = tracejit.compile(model, backend=BACKEND)
inp = torch.randn(2, 4)
want = model(inp)
tracejit.reset()
clone = copy.deepcopy(compiled)
check(isinstance(clone, torch.nn.Sequential) and clone is not compiled, "deepcopy gives another module of the class")
check(clone._orig_mod is not model, "deepcopy copies the original module")
check(all(a is not b for a, b in zip(clone.parameters(), compiled.parameters())), "deepcopy copies the parameters")
check(torch.allclose(clone(inp), want), "the copy computes what the original does")
check(tracejit.counters()["frames_traced"] > 0, "the copy is compiled (its calls are traced)")
with torch.no_grad():
    clone[0].weight.add_(1.0)
check(torch.allclose(compiled(inp), want), "changing the copy leaves the original alone")
check(not torch.allclose(clone(inp), want), "the copy runs its own parameters")
shallow = copy.copy(compiled)
check(shallow is not compiled and torch.allclose(shallow(inp), want), "copy.copy gives a compiled module too")
memo_pair = copy.deepcopy([compiled, compiled])
check(memo_pair[0] is memo_pair[1], "deepcopy keeps identity through its memo")
check_raises(TypeError, lambda: __import__("pickle").dumps(compiled), "pickling a compiled module still raises")

finish()
