"""_tracejit.GraphModule from plain /usr/bin/python3.11: construction from
text, .code / .graph / .text / print_readable, calls (in-place on inputs,
identity of returned inputs), pickling, and errors as Python exceptions."""
import io
import pickle
import contextlib

import torch
import _tracejit

TEXT = '''graph():
    attr w : f32[3] = hex"0000803f0000004000004040"
    %x : f32[2, 3] = placeholder[target=x]
    %w : f32[3] = get_attr[target=w]
    %mul : f32[2, 3] = call_function[target=aten.mul.Tensor](args = (%x, %w))
    %add_ : f32[2, 3] = call_function[target=aten.add_.Scalar](args = (%x, 1))
    %max_1 : (f32[2], i64[2]) = call_function[target=aten.max.dim](args = (%mul, 1))
    %getitem : i64[2] = call_function[target=getitem](args = (%max_1, 1))
    return (%mul, %getitem, %x)
'''


def main():
    gm = _tracejit.GraphModule(TEXT)
    assert _tracejit.GraphModule.from_text(TEXT).text == gm.text
    assert "%max_1 : (f32[2], i64[2])" in gm.graph, gm.graph
    assert "    mul = torch.ops.aten.mul.Tensor(x, w)\n" in gm.code, gm.code
    with contextlib.redirect_stdout(io.StringIO()) as out:
        readable = gm.print_readable()
    assert out.getvalue() == readable and readable.startswith("class GraphModule(torch.nn.Module):\n    def forward(self, x):")

    x = torch.arange(6.0).reshape(2, 3)
    mul, idx, same = gm(x)
    assert torch.equal(mul, torch.arange(6.0).reshape(2, 3) * torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(idx, torch.tensor([2, 2]))
    assert same is x and torch.equal(x, torch.arange(6.0).reshape(2, 3) + 1)

    # The generated code computes the same, given the attribute on self.
    ns = {}
    exec(gm.code, ns)
    class Self:
        w = torch.tensor([1.0, 2.0, 3.0])
    y = torch.arange(6.0).reshape(2, 3)
    ref = ns["forward"](Self(), y.clone())
    got = gm(y.clone())
    assert all(torch.equal(a, b) for a, b in zip(ref, got))

    gm2 = pickle.loads(pickle.dumps(gm))
    assert gm2.text == gm.text

    for bad, exc in [("graph():\n    %y : ? = bogus\n", ValueError), (42, TypeError)]:
        try:
            _tracejit.GraphModule(bad)
        except exc:
            pass
        else:
            raise AssertionError(f"{bad!r} did not raise {exc.__name__}")
    # An op that fails raises eager's own exception: type and message.
    w = torch.tensor([1.0, 2.0, 3.0])  # attr w
    try:
        torch.ops.aten.mul.Tensor(torch.ones(5, 7), w)
    except RuntimeError as e:
        eager = (type(e), str(e))
    try:
        gm(torch.ones(5, 7))
    except RuntimeError as e:
        assert (type(e), str(e)) == eager, (e, eager)
    else:
        raise AssertionError("shape mismatch did not raise")
    print("ok")


if __name__ == "__main__":
    main()
