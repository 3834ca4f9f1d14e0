"""Factories shared by the elementwise families: primitive + public function.

``elementwise_primitive`` makes an n-ary elementwise primitive with numpy
broadcasting (infer_meta from ``core.meta.elementwise_meta``);
``elementwise_op`` makes its public function, which converts Python scalars,
promotes dtypes like ``jax.numpy`` (Paddle's ``axis`` argument where asked),
validates the dtype class and binds the primitive once;
``register_elementwise`` writes its manifest entry. ``define_elementwise``
does all three for a parameter-free op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jax

from .._jax import Primitive
from ..core.meta import elementwise_meta, op_name, paddle_axis_shape
from ..core.primitive import define_primitive
from ..core.registry import PRIMITIVES, OpDef, register_op
from .convert import promote
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike


def elementwise_primitive(name: str, impl: Callable[..., Any], *, family: str,
                          operands: Sequence[str] = ("x",), kind: str = "float",
                          out_dtype: Any = None, params: tuple[str, ...] = ()) -> Primitive:
    return define_primitive(name, family=family, operands=tuple(operands), params=params,
                            infer_meta=elementwise_meta(name, tuple(operands), kind, out_dtype),
                            impl=impl)


def elementwise_op(prim: Primitive, *, kind: str, doc: str, paddle_axis: bool = False
                   ) -> Callable[..., Array]:
    """The public function of an elementwise primitive without params."""
    name = prim.name
    operands = PRIMITIVES[prim].operands

    if len(operands) == 1:
        def fn(x: ArrayLike) -> Array:
            (x,) = promote(name, {"x": x}, kind)
            return prim.bind(x)
    elif paddle_axis:
        def fn(x: ArrayLike, y: ArrayLike, *, axis: int = -1) -> Array:  # type: ignore[misc]
            x, y = promote(name, {"x": x, "y": y}, kind)
            if axis != -1:
                y = reshape(y, paddle_axis_shape(name, np.shape(x), np.shape(y), axis))
            return prim.bind(x, y)
    else:
        def fn(*args: ArrayLike) -> Array:  # type: ignore[misc]
            if len(args) != len(operands):
                raise TypeError(f"{op_name(name)} takes {len(operands)} arguments "
                                f"({', '.join(operands)}), got {len(args)}")
            return prim.bind(*promote(name, dict(zip(operands, args)), kind))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def register_elementwise(fn: Callable[..., Array], prim: Primitive, reference: Callable[..., Any],
                         *, linear: tuple[tuple[str, ...], ...] = (),
                         nondiff: tuple[str, ...] = (), not_implemented: tuple[str, ...] = (),
                         aliases: tuple[str, ...] = (), order: int = 2,
                         internal: tuple[Primitive, ...] = ()) -> OpDef:
    """The manifest entry of an elementwise op: its primitive and the
    ``internal`` ones it is made of besides (its derivative as a primitive
    of its own, e.g. ``sinc_slope``, which the checker then covers too)."""
    info = PRIMITIVES[prim]
    return register_op(OpDef(name=fn.__name__, family=info.family, fn=fn,
                             primitives=(prim, *internal),
                             reference=reference, operands=info.operands, linear=linear,
                             nondiff=nondiff, not_implemented=not_implemented,
                             aliases=aliases, order=order))


def define_elementwise(name: str, impl: Callable[..., Any], doc: str, *, family: str,
                       kind: str = "float", operands: Sequence[str] = ("x",),
                       out_dtype: Any = None, reference: Callable[..., Any] | None = None,
                       paddle_axis: bool = False,
                       linear: tuple[tuple[str, ...], ...] = (),
                       nondiff: tuple[str, ...] = (), not_implemented: tuple[str, ...] = (),
                       aliases: tuple[str, ...] = (), order: int = 2,
                       internal: tuple[Primitive, ...] = ()
                       ) -> tuple[Primitive, Callable[..., Array]]:
    """A parameter-free elementwise op in one call: its primitive
    (``elementwise_primitive``), its public function (``elementwise_op``) and
    its manifest entry (``register_elementwise``, ``reference`` defaulting to
    ``impl``, with the ``internal`` primitives its rules use). Returns
    ``(prim, fn)``."""
    prim = elementwise_primitive(name, impl, family=family, operands=operands, kind=kind,
                                 out_dtype=out_dtype)
    fn = elementwise_op(prim, kind=kind, doc=doc, paddle_axis=paddle_axis)
    register_elementwise(fn, prim, reference or impl, linear=linear, nondiff=nondiff,
                         not_implemented=not_implemented, aliases=aliases, order=order,
                         internal=internal)
    return prim, fn
