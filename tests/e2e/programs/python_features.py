"""A program of ordinary Python with some tensor work, run both by plain
python3.11 and by `tracejit --compile-all`; its printed transcript must be
identical (see ../compile_all_transcript.py)."""
import collections
import dataclasses
import functools
import itertools

import torch

torch.manual_seed(0)
COUNTER = 0


@dataclasses.dataclass
class Point:
    x: float
    y: float

    def norm(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5


class Acc:
    def __init__(self):
        self.items = []

    def add(self, t):
        self.items.append(t)
        return len(self.items)

    def total(self):
        return sum(self.items)


def fmt(t):
    return [round(float(v), 4) for v in t.flatten()]


def gen_squares(n):
    for i in range(n):
        yield i * i


def closure_counter():
    count = 0

    def inc(k=1):
        nonlocal count
        count += k
        return count

    return inc


def tensor_math(x, y):
    z = (x @ y).relu() + x.sum() / 3
    if z.shape[0] > 1:
        z = z * 2
    return torch.cat([z, -z], dim=0).softmax(dim=-1)


def data_dependent(x):
    if x.mean() > 0:
        return x.abs()
    return -x


def with_exceptions(x, bad):
    try:
        if bad:
            raise KeyError("bad")
        return x + 1
    except KeyError as e:
        return x - len(e.args[0])
    finally:
        global COUNTER
        COUNTER += 1


def loops(x, n):
    out = []
    i = 0
    while i < n:
        out.append(x * i)
        i += 1
    for a, b in zip(out, reversed(out)):
        x = x + a - b
    return x, {k: v.sum() for k, v in enumerate(out)}


def strings(n):
    words = [f"w{i:02d}" for i in range(n)]
    return "-".join(sorted(words, key=lambda w: w[::-1])).upper()


def main():
    x, y = torch.randn(3, 4), torch.randn(4, 3)
    print("tensor_math", fmt(tensor_math(x, y)))
    for v in (torch.ones(3), -torch.ones(3)):
        print("data_dependent", fmt(data_dependent(v)))
    print("exceptions", fmt(with_exceptions(x[0], False)), fmt(with_exceptions(x[0], True)), COUNTER)
    r, d = loops(torch.ones(2), 4)
    print("loops", fmt(r), {k: round(float(v), 4) for k, v in d.items()})
    print("strings", strings(5))
    print("generators", sum(gen_squares(6)), list(itertools.islice(gen_squares(100), 3)))
    inc = closure_counter()
    print("closures", inc(), inc(5), inc())
    acc = Acc()
    for t in torch.arange(4.0):
        acc.add(t * 2)
    print("objects", fmt(acc.total().reshape(1)), len(acc.items))
    p = Point(3.0, 4.0)
    print("dataclass", p.norm(), dataclasses.asdict(p))
    counts = collections.Counter("tracejit compiles")
    print("counter", counts.most_common(2))
    part = functools.partial(torch.add, alpha=2)
    print("partial", fmt(part(torch.ones(2), torch.ones(2))))
    with torch.no_grad():
        w = torch.randn(2, requires_grad=True)
        print("no_grad", (w * 2).requires_grad)
    print("recursion", functools.reduce(lambda a, b: a * b, range(1, 6)))


main()
