"""Rules of convert_element_type and copy."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np


from .. import _jax
from .._jax import Cotangent, JvpResult, MaybeUndefined, Tangent
from ..core.meta import is_float
from ..core.primitive import register_rules
from ..primitives.convert import convert_element_type_p, copy_p
from ._common import linear_map_rules, unary_batch
from ._fused import transpose_to


# convert_element_type ------------------------------------------------------
def _convert_element_type_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                              new_dtype: np.dtype) -> JvpResult:
    """Float -> float casts are linear (the tangent is cast the same way);
    casts to or from integers and bools have a zero derivative."""
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype)
    if _jax.is_zero(t) or not (is_float(_jax.aval_of(x).dtype) and is_float(new_dtype)):
        return out, _jax.zero_tangent(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype)


def _convert_element_type_transpose(ct: Cotangent, x: MaybeUndefined, *,
                                    new_dtype: np.dtype) -> list[Any]:
    """The cotangent cast back to x's dtype."""
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype)]


register_rules(convert_element_type_p, linear=("x",), jvp=_convert_element_type_jvp,
               transpose=_convert_element_type_transpose,
               batch=partial(unary_batch, convert_element_type_p))


# copy ----------------------------------------------------------------------
# The identity's transpose is the identity.
register_rules(copy_p, linear=("x",),
               **linear_map_rules(copy_p, partial(transpose_to, copy_p, copy_p),
                                  batch=partial(unary_batch, copy_p)))
