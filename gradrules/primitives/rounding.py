"""Rounding: floor, ceil, round (half to even), trunc. Their derivative is
zero wherever it exists (registered with the ZERO_DERIVATIVE marker)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._elementwise import define_elementwise

Array = jax.Array
FAMILY = "rounding"

floor_p, floor = define_elementwise("floor", jnp.floor, "Largest integer <= x. Derivative 0.",
                                    family=FAMILY)
ceil_p, ceil = define_elementwise("ceil", jnp.ceil, "Smallest integer >= x. Derivative 0.",
                                  family=FAMILY)
round_p, round = define_elementwise(  # noqa: A001
    "round", jnp.round, "Nearest integer, halves to even (as jnp.round and the core IR). "
    "Derivative 0.", family=FAMILY)
trunc_p, trunc = define_elementwise("trunc", jnp.trunc, "x rounded toward zero. Derivative 0.",
                                    family=FAMILY)
