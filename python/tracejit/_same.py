"""tracejit.same: the accuracy comparison of the debugging tools and the
fuzzer (API.md), in the spirit of torch._dynamo.utils.same.

Tensors compare by dtype (when `exact_dtype`), shape and values: exactly
for integer and bool tensors, within `tol` (absolute and relative) for
floating ones; when that fails and an `fp64_ref` (the same computation in
float64) is given, `res` still passes if it is no further from the fp64
values than `ref` is (plus a margin), since then eager itself carries that
error. `cos_similarity` compares flattened float tensors by cosine
similarity instead. Lists, tuples, dicts and torch.Size recurse; floats
compare within `tol`; anything else with ==.
"""
import math

import torch


def same(ref, res, fp64_ref=None, *, tol=1e-4, cos_similarity=False, equal_nan=False, exact_dtype=True):
    """True when `res` matches `ref` (see the module docstring)."""
    if isinstance(ref, (list, tuple, torch.Size)):
        if not isinstance(res, (list, tuple, torch.Size)) or len(ref) != len(res):
            return False
        refs64 = fp64_ref if isinstance(fp64_ref, (list, tuple)) and len(fp64_ref) == len(ref) else [None] * len(ref)
        return all(same(a, b, c, tol=tol, cos_similarity=cos_similarity, equal_nan=equal_nan, exact_dtype=exact_dtype)
                   for a, b, c in zip(ref, res, refs64))
    if isinstance(ref, dict):
        if not isinstance(res, dict) or set(ref) != set(res):
            return False
        refs64 = fp64_ref if isinstance(fp64_ref, dict) else {}
        return all(same(ref[k], res[k], refs64.get(k), tol=tol, cos_similarity=cos_similarity,
                        equal_nan=equal_nan, exact_dtype=exact_dtype) for k in ref)
    if isinstance(ref, torch.Tensor):
        return _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype)
    if isinstance(ref, float):
        if not isinstance(res, (int, float)) or isinstance(res, bool):
            return False
        if math.isnan(ref):
            return equal_nan and math.isnan(res)
        return math.isclose(ref, res, rel_tol=tol, abs_tol=tol)
    if isinstance(ref, bool) or isinstance(res, bool):
        return type(ref) is type(res) and ref == res
    return ref == res


def _same_tensor(ref, res, fp64_ref, tol, cos_similarity, equal_nan, exact_dtype):
    if not isinstance(res, torch.Tensor):
        return False
    if exact_dtype and ref.dtype != res.dtype:
        return False
    if ref.shape != res.shape:
        return False
    ref, res = ref.detach(), res.detach()
    if ref.is_sparse or res.is_sparse:
        ref, res = ref.to_dense(), res.to_dense()
    if not (ref.is_floating_point() or ref.is_complex()):
        return bool(torch.equal(ref.to(res.dtype) if not exact_dtype else ref, res))
    if ref.numel() == 0:
        return True
    res = res.to(ref.dtype)
    if cos_similarity:
        a, b = ref.flatten().double(), res.flatten().double()
        sim = torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-6)
        return bool(sim >= 0.99) or bool(torch.allclose(a, b, atol=tol, rtol=tol, equal_nan=equal_nan))
    if torch.allclose(ref, res, atol=tol, rtol=tol, equal_nan=equal_nan):
        return True
    if fp64_ref is None or not isinstance(fp64_ref, torch.Tensor) or fp64_ref.shape != ref.shape:
        return False
    # Eager's own error against float64 bounds the error the result may have.
    exact = fp64_ref.detach().double()
    ref_err = _rmse(exact, ref.double())
    res_err = _rmse(exact, res.double())
    return res_err <= 1.5 * ref_err + 1e-6 * max(1.0, float(exact.abs().max()))


def _rmse(a, b):
    mask = ~(torch.isnan(a) | torch.isnan(b))
    diff = (a - b)[mask]
    return float(diff.square().mean().sqrt()) if diff.numel() else 0.0
