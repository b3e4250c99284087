"""Issue 11: imports inside traced functions (relative and absolute, of
user modules: guarded, so patching the module recompiles) and
`cls.__subclasses__()` (guarded by calling it: a new subclass recompiles),
compiled vs eager with their graph and break counts."""
import torch

import imports_pkg
import imports_pkg.helpers
import imports_pkg.sub.layer
import tracejit
from capture_util import expect
from e2e_util import BACKEND, check, check_equal, finish

x = torch.randn(3, 4)

# --- relative imports (`from ..helpers import double`, `from .. import helpers`,
# `from . import layer`) and `import imports_pkg` inside the function
fn = imports_pkg.sub.layer.relative_imports
expect("relative and absolute imports of user modules inside a function", fn, (x,))

tracejit.reset()
compiled = tracejit.compile(fn, backend=BACKEND)
check(torch.allclose(compiled(x), x * 2 + x * 4 + 1), "imports: values")
saved = imports_pkg.helpers.double
imports_pkg.helpers.double = lambda t: t * 3  # the module's attribute is guarded
try:
    check(torch.allclose(compiled(x), x * 3 + x * 6 + 1), "a patched module function is seen (recompiled)")
    check_equal(tracejit.counters()["recompiles"], 1, "patching the module recompiles once")
finally:
    imports_pkg.helpers.double = saved
imports_pkg.SCALE = 5.0
try:
    check(torch.allclose(compiled(x), x * 2 + x * 10 + 1), "a changed module constant is seen")
finally:
    imports_pkg.SCALE = 2.0


# --- __subclasses__(): the live subclasses, guarded
class Base:
    scale = 1.0


class First(Base):
    scale = 2.0


class Second(Base):
    scale = 3.0


def weighted(t):
    out = t
    for cls in Base.__subclasses__():
        out = out * cls.scale
    return out, len(Base.__subclasses__())


expect("cls.__subclasses__()", weighted, (x,))
tracejit.reset()
compiled = tracejit.compile(weighted, backend=BACKEND)
out, n = compiled(x)
check(torch.allclose(out, x * 6) and n == 2, "__subclasses__: two subclasses")


class Third(Base):
    scale = 0.5


out, n = compiled(x)
check(torch.allclose(out, x * 3) and n == 3, "a subclass defined later is seen (the guard calls __subclasses__)")
check_equal(tracejit.counters()["recompiles"], 1, "a new subclass recompiles once")

finish()
