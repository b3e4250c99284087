import torch


def relative_imports(x):
    # imports inside the function, as lazy-importing model code does
    from ..helpers import double
    from .. import helpers
    from . import layer as self_module
    import imports_pkg
    return double(x) + helpers.double(x) * imports_pkg.SCALE + self_module.bias(x)


def bias(t):
    return torch.ones_like(t)
