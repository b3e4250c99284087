# Found by fuzzing trace-time metadata (issue 18, item 18): t.where(c, y)
# passed t as where's condition (a wrong result for bool t, an error
# otherwise), and trace-time strides of torch.where, flip and abs differed
# from the real results' (so .stride() / .is_contiguous() answered wrong).
import torch
try:
    import tracejit
except ImportError:
    tracejit = None


def f(x):
    return x.where(x > 0, x * 2)


def g(x):
    w, fl, a = torch.where(x > 0, x, torch.zeros_like(x)), x.flip(0), x[:, :0].abs()
    return w.stride(), fl.stride(), fl.is_contiguous(), a.stride()


def h(b):
    return b.where(b, ~b)


x = torch.arange(-3., 9.).view(3, 4).t()
b = torch.tensor([True, False])
print("eager    f", f(x).tolist(), "g", g(x), "h", h(b).tolist())
if tracejit:
    print("compiled f", tracejit.compile(f, backend="eager")(x).tolist(), "g", tracejit.compile(g, backend="eager")(x),
          "h", tracejit.compile(h, backend="eager")(b).tolist())
