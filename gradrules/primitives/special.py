"""Special functions: erf, erfc, erfinv, lgamma, digamma, polygamma(n, x),
bessel_i0e, bessel_i1e and the Hurwitz zeta(x, q).

Each op is one primitive; the docstrings give the derivatives the JVP rules
use (``gradrules/rules/special.py``). The derivatives chain into each other:
lgamma' = digamma, digamma' = polygamma(1, .), polygamma(n)' = polygamma(n + 1),
bessel_i0e' and bessel_i1e' are written with both Bessel functions, and
zeta's derivative in q is zeta again, so every order is made of these ops.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax import lax

from .._jax import Primitive
from ..core.args import int_param
from ..core.registry import OpDef, register_op
from ._elementwise import define_elementwise, elementwise_primitive
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "special"

# a parameter-free float-only special function: primitive, public function
# and manifest entry
_special: Callable[..., tuple[Primitive, Callable[..., Array]]] = partial(define_elementwise,
                                                                          family=FAMILY)


erf_p, erf = _special("erf", lax.erf, """The error function 2/sqrt(pi) int_0^x exp(-t**2) dt.

d/dx = 2/sqrt(pi) * exp(-x**2).""", reference=jsp.erf)
erfc_p, erfc = _special("erfc", lax.erfc, """The complementary error function 1 - erf(x),
accurate where erf(x) is close to 1.

d/dx = -2/sqrt(pi) * exp(-x**2).""", reference=jsp.erfc)
erfinv_p, erfinv = _special("erfinv", lax.erf_inv, """The inverse of erf on (-1, 1)
(+-inf at +-1).

d/dx = sqrt(pi)/2 * exp(erfinv(x)**2), written with the output.""", reference=jsp.erfinv)
lgamma_p, lgamma = _special("lgamma", lax.lgamma, """log|Gamma(x)|.

d/dx = digamma(x).""", reference=jsp.gammaln)
digamma_p, digamma = _special("digamma", lax.digamma, """The digamma function
psi(x) = Gamma'(x) / Gamma(x).

d/dx = polygamma(1, x).""", reference=jsp.digamma)
bessel_i0e_p, bessel_i0e = _special("bessel_i0e", lax.bessel_i0e, """The exponentially
scaled modified Bessel function of order 0: exp(-|x|) I0(x).

d/dx = bessel_i1e(x) - sign(x) * bessel_i0e(x) (0 at x == 0).""", reference=jsp.i0e)
bessel_i1e_p, bessel_i1e = _special("bessel_i1e", lax.bessel_i1e, """The exponentially
scaled modified Bessel function of order 1: exp(-|x|) I1(x).

d/dx = bessel_i0e(x) - bessel_i1e(x) * (sign(x) + 1/x) for |x| > eps**(1/8) of
the dtype, and its Taylor series in (x**2, |x|) below, where the formula's
higher derivatives cancel (exact at every order; at 0 the mean of the
one-sided limits); a double where keeps NaN and inf out of both branches.""", reference=jsp.i1e)
zeta_p, zeta = _special("zeta", jsp.zeta, """The Hurwitz zeta function
sum_{k >= 0} (k + q)**-x, for x > 1 and q > 0; x and q broadcast.

d/dq = -x * zeta(x + 1, q). The derivative with respect to x is not
implemented: differentiating with respect to x raises NotImplementedError.""",
                        operands=("x", "q"), not_implemented=("x",))


# ---------------------------------------------------------------- polygamma
def _polygamma_impl(x: Array, *, n: int) -> Array:
    return jsp.polygamma(n, x)


polygamma_p = elementwise_primitive("polygamma", _polygamma_impl, family=FAMILY,
                                    kind="float", params=("n",))


def polygamma(n: int, x: ArrayLike) -> Array:
    """The polygamma function psi^(n)(x), the n-th derivative of digamma
    (polygamma(0, x) = digamma(x)) for a static non-negative int ``n``.

    d/dx = polygamma(n + 1, x).
    """
    n = int_param("polygamma", "argument n", n, lo=0)
    (x,) = promote("polygamma", {"x": x}, "float")
    return polygamma_p.bind(x, n=n)


def _polygamma_reference(n: int, x: ArrayLike) -> Array:
    return jsp.polygamma(n, jnp.asarray(x))


register_op(OpDef(name="polygamma", family=FAMILY, fn=polygamma, primitives=(polygamma_p,),
                  reference=_polygamma_reference, operands=("x",)))
