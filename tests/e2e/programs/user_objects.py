"""User classes in tensor code: callable objects, properties computing
tensors, operator overloading, isinstance, recursion, walrus, chained
comparisons, mutable defaults: identical transcripts under python3.11 and
`tracejit --compile-all`."""
import torch

torch.manual_seed(6)


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


class Vec:
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Vec(self.t + (other.t if isinstance(other, Vec) else other))

    @property
    def norm(self):
        return self.t.norm()


def uses_objects(x, fns):
    for f in fns:
        x = f(x)
    v = Vec(x) + Vec(torch.ones_like(x)) + 1.0
    return v.t, v.norm


def tree_sum(t, depth):
    if depth == 0:
        return t.sum()
    half = t.shape[0] // 2
    return tree_sum(t[:half], depth - 1) + tree_sum(t[half:], depth - 1)


def expressions(x, limit=3, seen=[]):  # noqa: B006 (the shared default is the point)
    seen.append(len(seen))
    if (n := x.numel()) > limit:
        y = x[:limit]
    else:
        y = x
    ok = 0 < n <= 10 != 11
    return y * (2 if ok else 3), n, list(seen)


def main():
    x = torch.randn(4)
    t, norm = uses_objects(x, [Scale(2), Scale(0.5), torch.sin])
    print("objects", [round(v, 4) for v in t.tolist()], round(norm.item(), 4))
    print("recursion", round(tree_sum(torch.arange(16.0), 3).item(), 4))
    for i in range(2):
        y, n, seen = expressions(torch.arange(float(3 + i)))
        print("expressions", y.tolist(), n, seen)


main()
