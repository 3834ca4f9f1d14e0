"""The OpInfo-style sample table: every op's sample calls, in one place.

One ``OpInfo`` per op: a function of a numpy ``Generator`` that returns a few
``Sample`` calls (float64 arrays, covering broadcasting, negative axes, size-1
and size-0 dims and parameter variants), the dtypes the op is exercised at,
and tolerances where an op needs its own. The checker and the test suite both
read this table, so a new op is tested by adding its samples here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import jax

from ...core.families import FAMILIES as FAMILY_MODULES
from ...core.registry import get_op

FLOAT_DTYPES = ("float16", "bfloat16", "float32")
INT_DTYPES = ("int32", "int8", "uint8")
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES[:1]


@dataclass
class Sample:
    """One call ``op(*args, **kwargs)``. Array args are float64 numpy arrays
    (or integer / bool arrays for index, label and mask operands)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    desc: str = ""

    def describe(self) -> str:
        if self.desc:
            return self.desc
        parts = [_short(a) for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return ", ".join(parts)


def _short(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"{a.dtype.name}{list(a.shape)}"
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_short(x) for x in a) + "]"
    return repr(a)


@dataclass
class Tol:
    """``|a - b| <= atol + rtol * |b|`` (elementwise maxima)."""

    atol: float = 1e-6
    rtol: float = 1e-6


@dataclass
class OpInfo:
    """An op's samples, the dtypes its ``dtypes`` check runs at (``None``: the
    ``DTYPES`` of its family module, else ``FLOAT_DTYPES``), tolerances, and
    ``call``: how the samples call the op, a wrapper of its public function
    (None: called as it is; an op made for ``shard_map`` is called inside one)."""

    name: str
    samples: Callable[[np.random.Generator], list[Sample]]
    dtypes: tuple[str, ...] | None = None
    fd_tol: Tol = field(default_factory=Tol)
    fd_eps: float = 1e-5
    call: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None


def floats(rng: np.random.Generator, shape: Sequence[int], lo: float = -2.0,
           hi: float = 2.0) -> np.ndarray:
    return rng.uniform(lo, hi, tuple(shape))


def ints(values: object) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def unary_samples(lo: float = -2.0, hi: float = 2.0,
          shapes: Sequence[Sequence[int]] = ((2, 3), (), (0, 2)), **kwargs: Any
          ) -> Callable[[np.random.Generator], list[Sample]]:
    """Samples of a unary elementwise op on ``[lo, hi)``."""
    def make(rng: np.random.Generator) -> list[Sample]:
        return [Sample((floats(rng, s, lo, hi),), dict(kwargs)) for s in shapes]
    return make


BINARY_SHAPES = (((2, 3), (2, 3)), ((2, 3), (3,)), ((1, 3), (2, 1)), ((), (2,)), ((0, 2), (2,)))


def binary_samples(lo: float = -2.0, hi: float = 2.0, ylo: float | None = None,
           yhi: float | None = None, shapes: Sequence[Any] = BINARY_SHAPES,
           **kwargs: Any) -> Callable[[np.random.Generator], list[Sample]]:
    """Samples of a broadcasting binary op: equal shapes, trailing
    broadcasting, both operands stretched, a scalar, a size-0 operand."""
    def make(rng: np.random.Generator) -> list[Sample]:
        lo2 = lo if ylo is None else ylo
        hi2 = hi if yhi is None else yhi
        return [Sample((floats(rng, a, lo, hi), floats(rng, b, lo2, hi2)), dict(kwargs))
                for a, b in shapes]
    return make


def chain(*makers: Callable[[np.random.Generator], list[Sample]]
          ) -> Callable[[np.random.Generator], list[Sample]]:
    """The samples of every maker in turn, all drawn from the one generator."""
    def make(rng: np.random.Generator) -> list[Sample]:
        return [s for maker in makers for s in maker(rng)]
    return make


_TABLE: dict[str, OpInfo] | None = None
_REGISTERED: dict[str, OpInfo] = {}     # register_samples: ops defined outside the package


def register_samples(name: str, samples: Callable[[np.random.Generator], list[Any]]
                     | Sequence[Any], *, dtypes: Sequence[str] = FLOAT_DTYPES,
                     fd_tol: Tol | None = None, fd_eps: float = 1e-5) -> OpInfo:
    """Add the sample calls of an op defined with ``define_op``, so that
    ``gradrules.check(name)`` runs on them.

    ``samples``: a list of calls, or a function of a numpy ``Generator``
    returning one; a call is a ``Sample`` or a tuple of positional arguments.
    Float arrays of any precision are checked in float64. ``dtypes``: those
    the ``dtypes`` property runs the op at; ``fd_tol`` / ``fd_eps``: the
    finite-difference tolerance and step.
    """
    op = get_op(name).name            # a KeyError naming close matches for an unknown op
    if op in table() and op not in _REGISTERED:
        raise ValueError(f"register_samples: {op!r} has samples in gradrules' own table")
    make = samples if callable(samples) else (lambda rng, calls=list(samples): calls)

    def made(rng: np.random.Generator) -> list[Sample]:
        return [c if isinstance(c, Sample) else Sample(tuple(c)) for c in make(rng)]

    made.__name__ = f"{op}_samples"
    info = OpInfo(op, made, tuple(dtypes), fd_tol or Tol(), fd_eps)
    _REGISTERED[op] = info
    table()[op] = info
    return info


def table() -> dict[str, OpInfo]:
    """Every OpInfo, from the family modules of this package (and those added
    by ``register_samples``)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = dict(_REGISTERED)
        for fam in FAMILY_MODULES:
            mod = importlib.import_module(f"{__name__}.{fam}")
            default = getattr(mod, "DTYPES", FLOAT_DTYPES)
            for info in mod.OPINFOS:
                if info.name in _TABLE:
                    raise ValueError(f"samples for {info.name!r} are defined twice")
                if info.dtypes is None:
                    info = replace(info, dtypes=default)
                _TABLE[info.name] = info
    return _TABLE


def opinfo(name: str) -> OpInfo:
    return table()[get_op(name).name]


def sample_fn(name: str) -> Callable[..., Any]:
    """The function the sample calls of an op call: its public function,
    wrapped as its ``OpInfo.call`` says."""
    op = get_op(name)
    info = table().get(op.name)
    return info.call(op.fn) if info is not None and info.call is not None else op.fn


def samples_for(name: str) -> list[Sample]:
    """The sample calls of an op, made with a generator seeded by its name."""
    info = opinfo(name)
    seed = int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "little") % (2**32)
    return info.samples(np.random.default_rng(seed))


def largest_sample(name: str) -> Sample | None:
    """The op's sample call with the most elements and no empty operand (of
    an op without array operands, arange or zeros: its first sample)."""
    best, size = None, -1
    for sample in samples_for(name):
        arrays = [np.asarray(a) for a in jax.tree_util.tree_leaves(sample.args)
                  if isinstance(a, np.ndarray)]
        if all(a.size for a in arrays) and sum(a.size for a in arrays) > size:
            best, size = sample, sum(a.size for a in arrays)
    return best
