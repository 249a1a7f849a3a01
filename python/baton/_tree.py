"""State trees (nested state dicts) split into their tensors and a JSON skeleton, and back.

The skeleton keeps everything that is not a tensor, with its type: dicts as lists of
[key, value] pairs (str and int keys, so the optimizer's integer parameter ids survive),
{"l": [...]} lists, {"u": [...]} tuples, {"t": i} the i-th tensor, {"n": i} the i-th numpy
array, {"c": name} a function (not restored: the live object keeps its own), and None,
bools, ints, floats (inf and nan as {"f": "inf"}) and strings as themselves. JSON rather
than pickle: restoring a checkpoint never runs code.
"""
import json
import math

import numpy as np
import torch

_DTYPES = {str(d).split(".")[1]: d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
    torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
    torch.bool)}


def dtype_name(t):
    if isinstance(t, np.ndarray):
        return "numpy:" + t.dtype.str
    name = str(t.dtype).split(".")[1]
    if name not in _DTYPES:
        raise TypeError(f"tensors of dtype {t.dtype} cannot be checkpointed")
    return name


def empty_like_entry(entry):
    """A new tensor (or numpy array) with an entry's shape and dtype."""
    dtype = entry["dtype"]
    if dtype.startswith("numpy:"):
        return np.empty(entry["shape"], dtype=np.dtype(dtype[len("numpy:"):]))
    if dtype not in _DTYPES:
        raise ValueError(f"checkpoint names an unknown dtype {dtype!r} for {entry['name']}")
    return torch.empty(entry["shape"], dtype=_DTYPES[dtype])


def flatten(tree, path=""):
    """(skeleton, [(path, tensor or ndarray)]) for a state tree."""
    leaves = []
    return _flatten(tree, path, leaves), leaves


def _flatten(x, path, leaves):
    if isinstance(x, torch.Tensor):
        leaves.append((path, x))
        return {"t": len(leaves) - 1}
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            raise TypeError(f"{path}: numpy arrays of Python objects cannot be checkpointed")
        leaves.append((path, x))
        return {"n": len(leaves) - 1}
    if isinstance(x, dict):
        items = []
        for k, v in x.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"{path}: dict keys must be str or int to be checkpointed, "
                                f"got {type(k).__name__} {k!r}")
            items.append([k, _flatten(v, _join(path, k), leaves)])
        return {"d": items}
    if isinstance(x, (list, tuple)):
        kind = "l" if isinstance(x, list) else "u"
        return {kind: [_flatten(v, _join(path, i), leaves) for i, v in enumerate(x)]}
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else {"f": repr(x)}
    if isinstance(x, np.generic) and not isinstance(x, np.object_):
        return _flatten(x.item(), path, leaves)
    if callable(x):
        # Functions in state dicts (OneCycleLR's anneal_func, LambdaLR's lambdas are left
        # out by torch itself) are code, not state: the live object keeps its own.
        return {"c": getattr(x, "__qualname__", type(x).__name__)}
    raise TypeError(f"{path}: cannot checkpoint a value of type {type(x).__name__}: use "
                    "tensors, numpy arrays, numbers, strings, None, and lists, tuples and "
                    "dicts of them")


def _join(path, key):
    return f"{path}.{key}" if path else str(key)


def unflatten(skeleton, leaves):
    """The tree `skeleton` describes, with `leaves[i]` in place of the i-th tensor."""
    if isinstance(skeleton, dict):
        (kind, v), = skeleton.items()
        if kind in ("t", "n"):
            return leaves[v]
        if kind == "d":
            return {k: unflatten(item, leaves) for k, item in v if not _is_code(item)}
        if kind == "l":
            return [unflatten(item, leaves) for item in v]
        if kind == "u":
            return tuple(unflatten(item, leaves) for item in v)
        if kind == "f":
            return float(v)
        if kind == "c":
            return None
        raise ValueError(f"damaged state skeleton: unknown node {kind!r}")
    return skeleton


def _is_code(node):
    return isinstance(node, dict) and "c" in node


def describe(leaves):
    """The JSON description of the tensors: name, shape, dtype."""
    return [{"name": name, "shape": list(t.shape), "dtype": dtype_name(t)} for name, t in leaves]


def encode(tensors, skeleton):
    return json.dumps({"version": 1, "tensors": tensors, "tree": skeleton},
                      separators=(",", ":"), allow_nan=False)


def decode(text):
    d = json.loads(text)
    if not isinstance(d, dict) or d.get("version") != 1:
        raise ValueError("checkpoint state description has an unknown version")
    return d["tensors"], d["tree"]
