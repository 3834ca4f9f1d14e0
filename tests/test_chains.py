"""The seed yaml's explicit grad -> double_grad -> triple_grad chains (add,
subtract, multiply, divide, maximum, minimum, matmul, tile) come out of
composition: grad, jacfwd, hessian and third derivatives agree with the
float64 derivatives of the plain jax.numpy reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradrules
from gradrules.primitives.arithmetic import multiply
from gradrules.primitives.reduction import sum as gr_sum

rng = np.random.default_rng(0)
X = rng.uniform(0.5, 2.0, (2, 3))
Y = rng.uniform(0.5, 2.0, (3,)) * np.array([1, -1, 1])
M = rng.uniform(-1, 1, (3, 2))
W = rng.standard_normal((2, 3))

CHAINS = {
    "add": ((X, Y), {}),
    "subtract": ((X, Y), {}),
    "multiply": ((X, Y), {}),
    "divide": ((X, Y), {}),
    "maximum": ((X, Y), {}),
    "minimum": ((X, Y), {}),
    "matmul": ((X, M), {}),
    "tile": ((Y,), {"repeat_times": (2, 2)}),
}


def _scalar(fn, kwargs, w):
    """sum(w * fn(...)) squared, so that every order has a nonzero derivative."""
    def f(*args):
        out = fn(*args, **kwargs)
        s = gr_sum(multiply(out, np.resize(w, np.shape(out))))
        return multiply(s, s)
    return f


def _ref_scalar(fn, kwargs, w):
    def f(*args):
        out = fn(*args, **kwargs)
        s = jnp.sum(out * np.resize(w, np.shape(out)))
        return s * s
    return f


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chain_to_third_order(name):
    op = gradrules.get_op(name)
    args, kwargs = CHAINS[name]
    argnums = tuple(range(len(args)))
    ours, ref = _scalar(op.fn, kwargs, W), _ref_scalar(op.reference, kwargs, W)
    for make in (lambda f: jax.grad(f, argnums),
                 lambda f: jax.jacfwd(jax.grad(f, argnums), argnums),
                 lambda f: jax.hessian(f, argnums),
                 lambda f: jax.jacfwd(jax.hessian(f, argnums), argnums),
                 lambda f: jax.jacrev(jax.jacfwd(jax.grad(f, argnums), argnums), argnums)):
        got, want = jax.jit(make(ours))(*args), jax.jit(make(ref))(*args)
        jax.tree_util.tree_map(
            lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12), got, want)
    # the output itself (not squared) to third order along a direction
    report = gradrules.check(name, *args, checks=["reference", "fd"], **kwargs)
    report.raise_if_failed()
    assert op.order == 3
