"""Predicates, logical and bitwise ops: isfinite, isnan, isinf (float in,
bool out), logical_not/and/or/xor (bool in, bool out) and
bitwise_not/and/or/xor (integer or bool in, same dtype out).

None is differentiable: their JVP gives symbolic (float0) zero tangents and
their operands take no tangent. They have abstract evaluation (numpy
broadcasting for the binary ones) and batching like every op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import Primitive
from ._elementwise import define_elementwise

Array = jax.Array
FAMILY = "logical"


def _logical(name: str, fn: Callable[..., Array], doc: str, *, kind: str,
             operands: tuple[str, ...] = ("x",), out_dtype: Any = None
             ) -> tuple[Primitive, Callable[..., Array]]:
    return define_elementwise(name, fn, doc + "\n\nNot differentiable: the tangent is a "
                              "symbolic zero (float0).", family=FAMILY, kind=kind,
                              operands=operands, out_dtype=out_dtype, nondiff=operands)


XY = ("x", "y")
isfinite_p, isfinite = _logical("isfinite", jnp.isfinite, "True where x is neither inf nor NaN "
                                "(x floating).", kind="float", out_dtype=np.bool_)
isnan_p, isnan = _logical("isnan", jnp.isnan, "True where x is NaN (x floating).",
                          kind="float", out_dtype=np.bool_)
isinf_p, isinf = _logical("isinf", jnp.isinf, "True where x is +inf or -inf (x floating).",
                          kind="float", out_dtype=np.bool_)
logical_not_p, logical_not = _logical("logical_not", jnp.logical_not, "not x (x bool).",
                                      kind="bool")
logical_and_p, logical_and = _logical("logical_and", jnp.logical_and, "x and y, numpy "
                                      "broadcasting (bool operands).", kind="bool",
                                      operands=XY)
logical_or_p, logical_or = _logical("logical_or", jnp.logical_or, "x or y, numpy "
                                    "broadcasting (bool operands).", kind="bool", operands=XY)
logical_xor_p, logical_xor = _logical("logical_xor", jnp.logical_xor, "x != y for bools, "
                                      "numpy broadcasting.", kind="bool", operands=XY)
bitwise_not_p, bitwise_not = _logical("bitwise_not", jnp.bitwise_not, "~x: every bit flipped "
                                      "(integer or bool x; for bool, logical not).",
                                      kind="int_or_bool")
bitwise_and_p, bitwise_and = _logical("bitwise_and", jnp.bitwise_and, "x & y, numpy "
                                      "broadcasting (integer or bool operands).",
                                      kind="int_or_bool", operands=XY)
bitwise_or_p, bitwise_or = _logical("bitwise_or", jnp.bitwise_or, "x | y, numpy broadcasting "
                                    "(integer or bool operands).", kind="int_or_bool",
                                    operands=XY)
bitwise_xor_p, bitwise_xor = _logical("bitwise_xor", jnp.bitwise_xor, "x ^ y, numpy "
                                      "broadcasting (integer or bool operands).",
                                      kind="int_or_bool", operands=XY)
