# A graph run by the eager backend writes its input in place, records Python
# side effects, then an op fails at run time (an index out of range): eager
# keeps the side effects and the frame's own try/except catches the error;
# under tracejit they were lost and the error escaped the frame.
import torch
try:
    import tracejit
except ImportError:
    tracejit = None

LOG = []


def f(x, idx):
    try:
        x.add_(1)
        LOG.append("before")
        y = torch.gather(x, 0, idx)
    except RuntimeError:
        LOG.append("caught")
        y = x * 2
    return y


for name, fn in [("eager", f)] + ([("compiled", tracejit.compile(f, backend="eager"))] if tracejit else []):
    LOG.clear()
    x = torch.ones(2)
    y = fn(x, torch.tensor([0, 5]))
    print(name, "y =", y.tolist(), "x =", x.tolist(), "LOG =", LOG)
