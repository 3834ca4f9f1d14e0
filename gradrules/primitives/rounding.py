"""Rounding: floor, ceil, round (half to even), trunc. Their derivative is
zero wherever it exists (registered with the ZERO_DERIVATIVE marker)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._elementwise import elementwise_op, elementwise_primitive, register_elementwise

FAMILY = "rounding"

floor_p = elementwise_primitive("floor", jnp.floor, family=FAMILY)
floor = elementwise_op(floor_p, kind="float", doc="Largest integer <= x. Derivative 0.")
ceil_p = elementwise_primitive("ceil", jnp.ceil, family=FAMILY)
ceil = elementwise_op(ceil_p, kind="float", doc="Smallest integer >= x. Derivative 0.")
round_p = elementwise_primitive("round", jnp.round, family=FAMILY)
round = elementwise_op(round_p, kind="float",  # noqa: A001
                       doc="Nearest integer, halves to even (as jnp.round and the core IR). "
                           "Derivative 0.")
trunc_p = elementwise_primitive("trunc", jnp.trunc, family=FAMILY)
trunc = elementwise_op(trunc_p, kind="float", doc="x rounded toward zero. Derivative 0.")

for _fn, _p, _ref in ((floor, floor_p, jnp.floor), (ceil, ceil_p, jnp.ceil),
                      (round, round_p, jnp.round), (trunc, trunc_p, jnp.trunc)):
    register_elementwise(_fn, _p, _ref)

Array = jax.Array
