"""Rules of the matrix family. Every primitive here is linear in x: the JVP
binds it on the tangent (``linear_jvp``) and the transposes are matrix
primitives again: tril and triu are masks, their own transposes; diagonal
(a gather of the diagonal) and diag (a broadcast selected on the diagonal)
are each other's; trace's is diag of the cotangent as one entry repeated
along the diagonal, whose transpose is trace again. Batching moves the
batch axis to the front (axis params shifted by one) and binds the
primitive once."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._jax import Cotangent, MaybeUndefined, aval_of
from ..core.dims import Size
from ..core.primitive import register_rules
from ..primitives.matrix import diag_p, diagonal_p, trace_p, tril_p, triu_p
from ..primitives.shape import broadcast_in_dim_p, transpose_p
from ._common import front_batch, linear_jvp, shifted_front_batch
from ._fused import transpose_to


def embed_diagonal(ct: Any, shape: tuple[Size, ...], offset: int, axis1: int, axis2: int
                   ) -> Any:
    """The transpose of ``diagonal``: ``ct`` (the other axes, then the
    diagonal) written onto diagonal ``offset`` of zero matrices in axes
    (axis1, axis2) of an array of ``shape``: one ``diag``, then the
    two matrix axes moved back into place."""
    m = diag_p.bind(ct, offset=offset, rows=shape[axis1], cols=shape[axis2])
    order = [i for i in range(len(shape)) if i not in (axis1, axis2)] + [axis1, axis2]
    perm = tuple(int(i) for i in np.argsort(order))
    if perm == tuple(range(len(shape))):
        return m
    return transpose_p.bind(m, permutation=perm)


# ------------------------------------------------------------ tril / triu
register_rules(tril_p, linear=("x",), jvp=partial(linear_jvp, tril_p),   # its own transpose
               transpose=partial(transpose_to, tril_p, tril_p), batch=partial(front_batch, tril_p))
register_rules(triu_p, linear=("x",), jvp=partial(linear_jvp, triu_p),   # its own transpose
               transpose=partial(transpose_to, triu_p, triu_p), batch=partial(front_batch, triu_p))


# ---------------------------------------------------------------- diagonal
def _diagonal_transpose(ct: Cotangent, x: MaybeUndefined, *, offset: int, axis1: int,
                        axis2: int) -> list[Any]:
    """ct back onto the diagonal of zero matrices (diag)."""
    return [embed_diagonal(ct, tuple(aval_of(x).shape), offset, axis1, axis2)]


register_rules(diagonal_p, linear=("x",), jvp=partial(linear_jvp, diagonal_p),
               transpose=_diagonal_transpose,
               batch=partial(shifted_front_batch, diagonal_p, ("axis1", "axis2")))


# -------------------------------------------------------------------- diag
def _diag_transpose(ct: Cotangent, v: MaybeUndefined, *, offset: int, rows: Size,
                    cols: Size) -> list[Any]:
    """The diagonal of ct (``diagonal``); for a v of one entry repeated along
    the diagonal, the diagonal's sum (``trace``), kept as an axis of one."""
    nd = len(aval_of(ct).shape)
    v_shape = tuple(aval_of(v).shape)
    if v_shape[-1] != 1:
        return [diagonal_p.bind(ct, offset=offset, axis1=nd - 2, axis2=nd - 1)]
    summed = trace_p.bind(ct, offset=offset, axis1=nd - 2, axis2=nd - 1)
    return [broadcast_in_dim_p.bind(summed, shape=v_shape,
                                    broadcast_dimensions=tuple(range(nd - 2)))]


register_rules(diag_p, linear=("v",), jvp=partial(linear_jvp, diag_p),
               transpose=_diag_transpose, batch=partial(front_batch, diag_p))


# ------------------------------------------------------------------- trace
def _trace_transpose(ct: Cotangent, x: MaybeUndefined, *, offset: int, axis1: int,
                     axis2: int) -> list[Any]:
    """ct times the (shifted) identity: ct as the one entry repeated along
    the diagonal, written there by diag (a broadcast of ct over the matrix
    kept on the diagonal, as jnp.trace's transpose)."""
    rest = tuple(aval_of(ct).shape)
    one = broadcast_in_dim_p.bind(ct, shape=rest + (1,),
                                  broadcast_dimensions=tuple(range(len(rest))))
    return [embed_diagonal(one, tuple(aval_of(x).shape), offset, axis1, axis2)]


register_rules(trace_p, linear=("x",), jvp=partial(linear_jvp, trace_p),
               transpose=_trace_transpose,
               batch=partial(shifted_front_batch, trace_p, ("axis1", "axis2")))
