"""Bad input, argument by argument: every op of the sample table, called with
one argument of one of its sample calls replaced by a bad value, raises a
TypeError or ValueError at trace time whose message names the op
(``gradrules.<op>``) and the argument (its name in the signature), eagerly
and under ``jax.jit`` (``jax.eval_shape``, the arrays abstract).

What replaces an argument, and what the call must then do (``error``: raise
naming the op and the argument; ``as reference``: where the op's jax.numpy
reference raises, an error naming the op and an argument of the call; where
it accepts, the reference's output shapes, or an error naming the op and an
argument of the call: a contract stricter than jax.numpy's):

- each array argument: a complex array, a string, None (unless the parameter
  defaults to None): error. An integer or a bool array where the sample
  has floats: error when the op's ``OpInfo.dtypes`` (the dtypes it
  supports) holds no integer dtype, else a valid call or an error. A
  floating array where the sample has integers or bools (indices, labels,
  keys, masks): error. One more element on the last axis, one axis fewer,
  one axis more: as reference.
- each other argument, by its value in the sample and its annotation in
  the signature: a string for a bool, an int, a float, a sequence or a
  block sizes dataclass; a float for an int; a list for an int or a float
  (the annotation allows no sequence); None (the annotation allows no
  None); an unknown string choice; a string for a dtype: error. An axis
  set to ndim or -ndim - 1, another int set to -3 or 0, floats in a
  sequence of ints, an int for a string annotated ``Any``: as reference.
- each float param (a float in the sample, or annotated ``float``, not an
  array; in a sequence, its first entry): NaN, and +-inf unless
  ``INF_OK`` names it (an unbounded clip), and the values just outside its
  valid range (``OUT_OF_RANGE``: what jax.numpy, jax.nn or PyTorch
  accept): error.

Every argument of every op's signature is replaced: each argument of the
op's non-empty samples in the largest sample that passes it (once more
where another passes a scalar for an array or the reverse), and those no
sample passes in the op's largest sample with a valid value added
(``EXTRA_KWARGS``); ``NOT_WALKED`` lists the exceptions, with the reason.

An op made for ``shard_map`` (``OpInfo.call``) is called inside one, over a
mesh of one device, with the axis name its wrapper binds.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, is_dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec

import gradrules as gr
from gradrules.core.registry import OPS
from gradrules.pallas import attention as attention_kernels, gated as gated_kernels
from gradrules.pallas import loss as loss_kernels, norm as norm_kernels
from gradrules.pallas import rope as rope_kernels, softmax as softmax_kernels
from gradrules.testing.samples import Sample, opinfo, samples_for, table
from gradrules.testing.samples.parallel import AXIS

ERROR, AS_REFERENCE, VALID_OR_ERROR = "error", "as reference", "valid or error"

# The arguments no non-empty sample passes, with valid values: the walk adds
# each set to the op's largest sample (family tests check their values).
EXTRA_KWARGS: dict[str, tuple[dict[str, Any], ...]] = {
    "full_like": ({"dtype": np.float32},),
    "one_hot": ({"dtype": np.float32},),
    "pad": ({"value": np.array(0.5)},),
    "cross": ({"axis": None, "axisa": 0, "axisb": 0, "axisc": 0},),
    "batch_norm": ({"eps": 1e-3},),
    "fused_linear_cross_entropy": ({"ignore_index": 1},),
    "log_softmax": ({"where": np.array([True, False, True, True])},
                    {"block_sizes": softmax_kernels.BlockSizes()}),
    "softmax": ({"block_sizes": softmax_kernels.BlockSizes()},),
    "cross_entropy": ({"block_sizes": loss_kernels.BlockSizes()},),
    "rms_norm": ({"block_sizes": norm_kernels.BlockSizes()},),
    "layer_norm": ({"block_sizes": norm_kernels.BlockSizes()},),
    "attention": ({"block_sizes": attention_kernels.BlockSizes()},),
    "rope": ({"block_sizes": rope_kernels.BlockSizes()},),
    "silu_gated": ({"block_sizes": gated_kernels.BlockSizes()},),
    "gelu_gated": ({"block_sizes": gated_kernels.BlockSizes()},),
}

# The arguments of a signature the walk leaves alone, and why.
NOT_WALKED = {("vocab_parallel_cross_entropy", "axis_name"): "the shard_map wrapper binds it"}

# The valid range of each float param that has one (what jax.numpy, jax.nn
# or PyTorch accept), as the values just outside it, by param name (every
# op) or (op, param); the others take any finite number.
OUT_OF_RANGE: dict[Any, tuple[float, ...]] = {
    "eps": (0.0, -1e-5),                    # > 0: the norms
    "correction": (-1.0,),                  # >= 0: var, std, var_mean
    "label_smoothing": (-0.1, 1.1),         # [0, 1]: the losses
    "z_loss": (-0.1,),                      # >= 0
    "momentum": (-0.1, 1.1),                # [0, 1]: batch_norm
    "rate": (-0.1, 1.1),                    # [0, 1]: dropout (1 drops everything)
    "theta": (0.0, -1.0),                   # > 0: rope's base
    "limit": (0.0, -1.0),                   # > 0: the gated ops' clamp
    "std": (-1.0,),                         # >= 0: normal
    "lam": (0.0, -1.0),                     # > 0: exponential
    "scale_factor": (0.0, -1.0, 1e30),      # > 0, an output an array can hold: upsample2d
    ("softplus", "beta"): (0.0, -1.0),      # > 0
    ("celu", "alpha"): (0.0, -1.0),         # > 0
    ("div_scale", "scale"): (0.0,),         # != 0
    ("arange", "step"): (0.0,),             # != 0
    ("arange", "stop"): (1e30,),            # a result an array can hold
}
# The float params that may be infinite: the bounds of a clip, softplus's
# switch to the identity.
INF_OK = {"initial", ("clamp", "min"), ("clamp", "max"), ("hardtanh", "min_val"),
          ("hardtanh", "max_val"), ("softplus", "threshold")}


@dataclass
class BadCall:
    """One call of ``op`` with ``arg`` replaced (``kind`` says by what)."""

    op: str
    arg: str
    kind: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    expect: str
    given: tuple[str, ...]         # the arguments of the call, by name

    def __str__(self) -> str:
        return f"{self.op}({self.arg}: {self.kind})"


def _nonempty(sample: Sample) -> bool:
    return all(np.size(a) for a in jax.tree_util.tree_leaves((sample.args, sample.kwargs))
               if isinstance(a, np.ndarray))


def _size(sample: Sample) -> int:
    return sum(a.size for a in jax.tree_util.tree_leaves((sample.args, sample.kwargs))
               if isinstance(a, np.ndarray))


def _positional_names(name: str, sample: Sample) -> list[str]:
    """The signature's name of each positional argument of ``sample`` (the
    manifest's operand names for an op that takes ``*args`` alone)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.VAR_POSITIONAL)
    params = [p for p in inspect.signature(OPS[name].fn).parameters.values() if p.kind in kinds]
    if len(params) == 1 and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        return [o.lstrip("*") for o in OPS[name].operands][:len(sample.args)]
    return [params[min(i, len(params) - 1)].name for i in range(len(sample.args))]


def _int_ok(name: str) -> bool:
    """Whether the op supports integer operands (``OpInfo.dtypes``)."""
    return any(np.dtype(d).kind in "iu" for d in opinfo(name).dtypes or ())


def _array_replacements(name: str, param: inspect.Parameter | None, a: np.ndarray
                        ) -> list[tuple[str, Any, str]]:
    out = [("complex", a.astype(np.complex64), ERROR), ("string", "abc", ERROR)]
    if param is None or param.default is not None:
        out.append(("None", None, ERROR))
    if a.dtype.kind == "f":
        maybe = VALID_OR_ERROR if _int_ok(name) else ERROR
        out += [("int32", np.rint(3 * np.where(np.isfinite(a), a, 0)).astype(np.int32), maybe),
                ("bool", a > 0, maybe)]
    else:
        out.append(("float32", a.astype(np.float32), ERROR))
    if a.ndim:
        out += [("last axis + 1", np.resize(a, a.shape[:-1] + (a.shape[-1] + 1,)), AS_REFERENCE),
                ("one axis fewer", a[0], AS_REFERENCE)]
    out.append(("one axis more", np.stack([a, a]), AS_REFERENCE))
    return out


def _allows(annotation: Any, *words: str) -> bool:
    text = str(annotation)
    return any(w in text for w in words + ("Any",))


def _floats(v: Any) -> Any:
    """``v`` with every int in it (at any depth of nesting) plus 0.5."""
    if isinstance(v, (list, tuple)):
        return [_floats(x) for x in v]
    return v + 0.5 if isinstance(v, int) and not isinstance(v, bool) else v


def _is_axis(arg: str) -> bool:
    return arg.startswith("axis") or arg in ("source", "destination")


def _static_replacements(arg: str, param: inspect.Parameter | None, v: Any, ndim: int
                         ) -> list[tuple[str, Any, str]]:
    ann = param.annotation if param is not None else "Any"
    out = []
    if v is not None and param is not None and param.default is not None \
            and not _allows(ann, "None", "Axis"):
        out.append(("None", None, ERROR))
    if isinstance(v, (bool, np.bool_)):
        out.append(("string", "abc", ERROR))
    elif isinstance(v, (int, np.integer)):
        out.append(("string", "abc", ERROR))
        if not _allows(ann, "float"):
            out.append(("float", float(v) + 0.5, ERROR))
        if not _allows(ann, "Sequence", "tuple", "Axis"):
            out.append(("list", [v], ERROR))
        if _is_axis(arg):
            out += [("ndim", ndim, AS_REFERENCE), ("-ndim - 1", -ndim - 1, AS_REFERENCE)]
        else:
            out += [("-3", -3, AS_REFERENCE)] + ([("0", 0, AS_REFERENCE)] if v else [])
    elif isinstance(v, float):
        out += [("string", "abc", ERROR), ("list", [v], ERROR)]
    elif isinstance(v, str):
        out += [("unknown choice", "abcz", ERROR),
                ("int", 3, AS_REFERENCE if _allows(ann) else ERROR)]
    elif isinstance(v, (tuple, list)):
        out += [("strings", ["abc"] * len(v), ERROR), ("floats", _floats(v), AS_REFERENCE)]
    elif isinstance(v, type) or isinstance(v, np.dtype):
        out.append(("string", "float33", ERROR))
    elif is_dataclass(v):
        out.append(("string", "abc", ERROR))
    return out


def _is_float_param(param: inspect.Parameter | None, v: Any) -> bool:
    """Whether ``v`` is a number or a sequence of numbers, one a float or
    the parameter annotated ``float`` (not an array: NaN is an array's
    value)."""
    numbers = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if not numbers or any(isinstance(x, bool) or not isinstance(x, (int, float))
                          for x in numbers) or "Array" in str(getattr(param, "annotation", "")):
        return False
    return any(isinstance(x, float) for x in numbers) or (
        param is not None and "float" in str(param.annotation))


def _float_replacements(op: str, arg: str, param: inspect.Parameter | None, v: Any
                        ) -> list[tuple[str, Any, str]]:
    """NaN, +-inf (unless ``INF_OK``) and the values outside the valid
    range (``OUT_OF_RANGE``) of a float param; in a sequence, its first
    entry: all errors."""
    if not _is_float_param(param, v):
        return []
    bad = [("NaN", math.nan)]
    if arg not in INF_OK and (op, arg) not in INF_OK:
        bad += [("inf", math.inf), ("-inf", -math.inf)]
    bad += [(repr(x), x) for x in OUT_OF_RANGE.get((op, arg), OUT_OF_RANGE.get(arg, ()))]
    if isinstance(v, (tuple, list)):
        return [(f"first entry {kind}", type(v)([x, *v[1:]]), ERROR) for kind, x in bad]
    return [(kind, x, ERROR) for kind, x in bad]


def _replace(sample: Sample, where: tuple[Any, ...], value: Any
             ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``sample``'s arguments with the one at ``where`` (a position, a
    position and an index into a list, or a keyword) replaced."""
    args, kwargs = list(sample.args), dict(sample.kwargs)
    if isinstance(where[0], str):
        kwargs[where[0]] = value
    elif len(where) == 2:
        seq = list(args[where[0]])
        seq[where[1]] = value
        args[where[0]] = type(args[where[0]])(seq)
    else:
        args[where[0]] = value
    return tuple(args), kwargs


def _slots(name: str, sample: Sample) -> list[tuple[str, tuple[Any, ...], Any]]:
    """(argument name, where, value) of each argument of ``sample``: its
    array operands (one entry per array in a list of arrays) and its other
    arguments."""
    out = []
    for i, (arg, a) in enumerate(zip(_positional_names(name, sample), sample.args)):
        if isinstance(a, (list, tuple)) and any(isinstance(b, np.ndarray) for b in a):
            out += [(arg, (i, j), b) for j, b in enumerate(a) if isinstance(b, np.ndarray)]
        else:
            out.append((arg, (i,), a))
    out += [(k, (k,), v) for k, v in sample.kwargs.items()]
    return out


def _walked_samples(name: str) -> list[Sample]:
    """The op's non-empty samples, largest first, and its largest with each
    set of ``EXTRA_KWARGS`` added."""
    samples = sorted((s for s in samples_for(name) if _nonempty(s)), key=_size, reverse=True)
    return samples + [Sample(samples[0].args, {**samples[0].kwargs, **extra})
                      for extra in EXTRA_KWARGS.get(name, ())]


@lru_cache(maxsize=None)
def bad_calls() -> tuple[BadCall, ...]:
    """Every bad call of every op of the table (see the module docstring):
    each argument replaced in the first of ``_walked_samples`` that passes it."""
    calls = []
    for name in table():
        params = inspect.signature(OPS[name].fn).parameters
        done: set[tuple[str, bool]] = set()     # (argument, an array?) replaced so far
        for sample in _walked_samples(name):
            given = tuple(_positional_names(name, sample)) + tuple(sample.kwargs)
            first = next((a for a in jax.tree_util.tree_leaves(sample.args)
                          if isinstance(a, np.ndarray)), np.zeros(()))
            slots = [(arg, where, v) for arg, where, v in _slots(name, sample)
                     if (arg, isinstance(v, np.ndarray)) not in done and v is not None]
            done.update((arg, isinstance(v, np.ndarray)) for arg, _, v in slots)
            for arg, where, value in slots:
                param = params.get(arg)
                reps = (_array_replacements(name, param, value) if isinstance(value, np.ndarray)
                        else _static_replacements(arg, param, value, first.ndim)
                        + _float_replacements(name, arg, param, value))
                for kind, bad, expect in reps:
                    args, kwargs = _replace(sample, where, bad)
                    calls.append(BadCall(name, arg, kind, args, kwargs, expect, given))
    return tuple(calls)


# ------------------------------------------------------------ calling an op
_MESH: list[Any] = []


def _callable(name: str) -> Any:
    """The op's public function; an op made for ``shard_map`` inside one
    over a mesh of one device (the axis ``AXIS``)."""
    fn = OPS[name].fn
    if opinfo(name).call is None:
        return fn
    if not _MESH:
        _MESH.append(jax.make_mesh((1,), (AXIS,), axis_types=(AxisType.Explicit,),
                                   devices=jax.devices()[:1]))

    def in_shard_map(*args: Any, **kwargs: Any) -> Any:
        return jax.shard_map(lambda: fn(*args, axis_name=AXIS, **kwargs), mesh=_MESH[0],
                             in_specs=(), out_specs=PartitionSpec(), check_vma=False)()
    return in_shard_map


def _abstract(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``jax.eval_shape`` of ``fn(*args, **kwargs)`` with every numpy array
    of the arguments abstract (as under ``jax.jit``), the rest static."""
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs),
                                              is_leaf=lambda a: isinstance(a, np.ndarray))
    arrays = [a for a in leaves if isinstance(a, np.ndarray)]

    def call(*dynamic: Any) -> Any:
        it = iter(dynamic)
        a, k = jax.tree_util.tree_unflatten(
            tree, [next(it) if isinstance(x, np.ndarray) else x for x in leaves])
        return fn(*a, **k)
    return jax.eval_shape(call, *arrays)


def _outcome(fn: Any, call: BadCall, eager: bool) -> tuple[str, Any]:
    """("ok", the result's shapes) or ("error"/"crash", the exception)."""
    try:
        out = fn(*call.args, **call.kwargs) if eager else _abstract(fn, call.args, call.kwargs)
    except (TypeError, ValueError) as exc:
        return "error", exc
    except Exception as exc:   # noqa: BLE001  (a crash, not a clear error)
        return "crash", exc
    return "ok", [tuple(np.shape(o)) for o in jax.tree_util.tree_leaves(out)]


def _names(message: str, op: str, args: tuple[str, ...]) -> bool:
    """Whether ``message`` names the op and one of ``args`` (as a word)."""
    prefix = f"gradrules.{op}"
    if prefix not in message:
        return False
    rest = message.replace(prefix, "")
    return any(re.search(rf"(?<![\w.]){re.escape(a)}(?!\w)", rest) for a in args)


def _problem(call: BadCall, status: str, got: Any, reference: tuple[str, Any] | None
             ) -> str | None:
    """What is wrong with the outcome of ``call`` (None: nothing);
    ``reference``: the outcome of the op's reference on it, where the
    expectation is ``AS_REFERENCE`` and the op gave a result."""
    if status == "ok":
        if call.expect == VALID_OR_ERROR or reference is not None and reference == ("ok", got):
            return None
        if reference is not None and reference[0] == "ok":
            return f"shapes {got}, the reference gives {reference[1]}"
        return f"no error (gives shapes {got})"
    text = f"{type(got).__name__}: {got}"[:300]
    if status == "crash":
        return text
    # an error where the reference may accept the call: a stricter contract,
    # which may name another argument of the call (a shape must agree with it)
    args = (call.arg,) if call.expect != AS_REFERENCE else (call.arg, *call.given)
    return None if _names(str(got), call.op, args) else f"does not name {' or '.join(args)}: {text}"


@pytest.fixture(scope="module", autouse=True)
def _no_traceback_filtering():
    """JAX filters the traceback of every exception raised under a
    transform; hundreds of expected errors cost seconds that way."""
    before = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", "off")
    yield
    jax.config.update("jax_traceback_filtering", before)


def test_bad_calls_reach_every_op_and_kind() -> None:
    """The walk reaches every op with array operands and every expectation."""
    calls = bad_calls()
    with_arrays = {n for n in table() if any(
        isinstance(a, np.ndarray) for s in samples_for(n)
        for a in jax.tree_util.tree_leaves((s.args, s.kwargs)))}
    assert with_arrays <= {c.op for c in calls}
    assert {c.expect for c in calls} == {ERROR, AS_REFERENCE, VALID_OR_ERROR}


def test_every_argument_is_walked() -> None:
    """Every argument of every op's signature but ``NOT_WALKED`` is replaced,
    every float param by NaN, and every entry of ``OUT_OF_RANGE``,
    ``INF_OK`` and ``EXTRA_KWARGS`` is used."""
    calls = bad_calls()
    walked = {(c.op, c.arg) for c in calls}
    kinds = {(c.op, c.arg, c.kind.removeprefix("first entry ")) for c in calls}
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    missing = [(name, p.name) for name in table()
               for p in inspect.signature(OPS[name].fn).parameters.values()
               if p.kind not in variadic and (name, p.name) not in walked | set(NOT_WALKED)]
    assert not missing, f"arguments no bad call replaces: {missing}"
    floats = {(op, arg) for op, arg, kind in kinds if kind == "NaN"}
    annotated = {(name, p.name) for name in table()
                 for p in inspect.signature(OPS[name].fn).parameters.values()
                 if "float" in str(p.annotation) and "Array" not in str(p.annotation)}
    assert not annotated - floats, f"float params never NaN: {annotated - floats}"
    for key, values in OUT_OF_RANGE.items():
        used = [(op, arg) for op, arg in floats if key in (arg, (op, arg))]
        assert used and all((op, arg, repr(x)) in kinds for op, arg in used for x in values), key
    for key in INF_OK:
        used = [(op, arg) for op, arg in floats if key in (arg, (op, arg))]
        assert used and not any((op, arg, "inf") in kinds for op, arg in used), key
    for name, extras in EXTRA_KWARGS.items():
        assert all((name, k) in walked for extra in extras for k in extra), name


def test_every_bad_argument_is_named() -> None:
    """Every bad call under jit (abstract) as its expectation says (the
    reference is traced only where the op gives a result); then eagerly,
    every call that raised under jit: it raises there too, naming the op
    and the argument (a valid call is not run eagerly: it would compile)."""
    problems = {}
    for call in bad_calls():
        fn = _callable(call.op)
        status, got = _outcome(fn, call, eager=False)
        reference = (_outcome(OPS[call.op].reference, call, eager=False)
                     if call.expect == AS_REFERENCE and status == "ok" else None)
        problem = _problem(call, status, got, reference)
        if not problem and status != "ok":
            problem = _problem(call, *_outcome(fn, call, eager=True), None)
            problem = problem and f"eagerly: {problem}"
        if problem:
            problems[str(call)] = problem
    assert not problems, f"{len(problems)} bad calls:\n" + "\n".join(
        f"{k}: {v}" for k, v in problems.items())


# Sizes no array can hold (more than 2**63 - 1 elements), set by an int or
# float argument: a ValueError naming the op at trace time (every primitive's
# abstract eval checks its output size), where XLA would fail deep in MLIR.
_HUGE = 10**20
_TOO_LARGE = {
    "pad": lambda x: gr.pad(x, ((0, _HUGE), (0, 0))),
    "repeat": lambda x: gr.repeat(x, repeats=_HUGE, axis=0),
    "broadcast_to": lambda x: gr.broadcast_to(x, (_HUGE, 2, 3)),
    "one_hot": lambda x: gr.one_hot(jnp.zeros((2,), jnp.int32), num_classes=_HUGE),
    "full": lambda x: gr.full((_HUGE, _HUGE), 1.0),
    "arange": lambda x: gr.arange(0.0, 1e30),
    "upsample2d": lambda x: gr.upsample2d(x[None, None], scale_factor=1e30),
}


@pytest.mark.parametrize("op", sorted(_TOO_LARGE))
def test_an_output_too_large_for_an_array_is_named(op: str) -> None:
    call = _TOO_LARGE[op]
    for fn in (call, jax.jit(call)):
        with pytest.raises(ValueError, match=rf"gradrules\.{op}: .*more than an array can hold"):
            fn(jnp.ones((2, 3), jnp.float32))
