"""linalg: matmul semantics and derivatives against jnp.matmul to order 3,
mm / bmm / addmm / linear as primitives of their own (jaxprs, vmap folds),
einsum forms, fused_gemm_epilogue activations, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives.linalg import (addmm, bmm, einsum, fused_gemm_epilogue, linear,
                                         matmul, mm)

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


def _derivatives(f, args, order):
    """f and its directional derivatives up to ``order`` along one direction."""
    rng = np.random.default_rng(1)
    ts = tuple(rng.standard_normal(np.shape(a)) for a in args)
    fns = [f]
    for _ in range(order):
        prev = fns[-1]
        fns.append(lambda *x, prev=prev: jax.jvp(prev, x, ts)[1])
    return [jax.jit(g)(*args) for g in fns]


@pytest.mark.parametrize("xs, ys, tx, ty", [
    ((3,), (3,), False, False),            # dot
    ((3,), (3, 4), False, False),          # vector-matrix
    ((3, 2), (3,), True, False),           # matrix-vector (transposed x)
    ((2, 1, 3, 4), (5, 4, 3), True, True),  # broadcast batch axes
])
def test_matmul_matches_jnp_matmul_to_order_3(xs, ys, tx, ty) -> None:
    x, y = _r(*xs), _r(*ys)

    def ref(a, b):
        a = jnp.swapaxes(a, -1, -2) if tx and a.ndim > 1 else a
        b = jnp.swapaxes(b, -1, -2) if ty and b.ndim > 1 else b
        return jnp.matmul(a, b, precision="highest")

    def ours(a, b):
        return matmul(a, b, transpose_x=tx, transpose_y=ty)

    for got, want in zip(_derivatives(ours, (x, y), 3), _derivatives(ref, (x, y), 3)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    g_ours = jax.grad(lambda a, b: jnp.sum(ours(a, b) ** 2), argnums=(0, 1))(x, y)
    g_ref = jax.grad(lambda a, b: jnp.sum(ref(a, b) ** 2), argnums=(0, 1))(x, y)
    for a, b in zip(g_ours, g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_matmul_double_grad_matches_reference() -> None:
    """Paddle's matmul_double_grad: the derivative of the VJP in x, y and ct."""
    x, y, w = _r(2, 3), _r(3, 4), _r(2, 4)

    def vjp_of(mm_fn):
        return lambda a, b, c: jax.vjp(mm_fn, a, b)[1](c)

    ours = jax.jit(jax.jacfwd(vjp_of(matmul), argnums=(0, 1, 2)))(x, y, w)
    ref = jax.jit(jax.jacfwd(vjp_of(jnp.matmul), argnums=(0, 1, 2)))(x, y, w)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_matmul_integer_operands() -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = matmul(x, x, transpose_y=True)
    assert out.dtype == jnp.int32
    np.testing.assert_array_equal(out, x @ x.T)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk", [(2, 1, 3, 2), (4, 2, 5)]),
    ("b...,b...->b", [(2, 3, 1), (2, 1, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 1), (1, 2)]),
    ("ij,ij->ij", [(0, 2), (0, 2)]),
])
def test_einsum_matches_jnp_einsum_with_derivatives(eq, shapes) -> None:
    ops = [_r(*s) for s in shapes]
    np.testing.assert_allclose(einsum(eq, *ops), jnp.einsum(eq, *ops), rtol=1e-12, atol=1e-12)

    def loss(fn):
        return lambda *a: jnp.sum(jnp.sin(fn(eq, *a)))

    g = jax.grad(loss(einsum), argnums=tuple(range(len(ops))))(*ops)
    want = jax.grad(loss(jnp.einsum), argnums=tuple(range(len(ops))))(*ops)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("iij,j->ji", [(3, 3, 2), (2,)]),
    ("ij,k->i", [(2, 3), (4,)]),
    ("i,jk,j->ik", [(2,), (3, 2), (3,)]),
])
def test_einsum_transpose_per_operand_dot_product_identity(eq, shapes) -> None:
    """<A_k x, y> == <x, A_k^T y> for the map of each operand k, the others fixed."""
    ops = [_r(*s) for s in shapes]
    y = _r(*jnp.einsum(eq, *ops).shape)
    for k in range(len(ops)):
        def a_k(v, k=k):
            return einsum(eq, *ops[:k], v, *ops[k + 1:])
        x = _r(*shapes[k])
        (at_y,) = jax.linear_transpose(a_k, x)(y)
        np.testing.assert_allclose(jnp.vdot(a_k(x), y), jnp.vdot(x, at_y), rtol=1e-12)


def test_einsum_transpose_of_a_diagonal_is_a_diagonal_matrix() -> None:
    ct = np.array([1.0, 2.0, 3.0])
    (g,) = jax.linear_transpose(lambda a: einsum("ii->i", a), np.zeros((3, 3)))(ct)
    np.testing.assert_array_equal(g, np.diag(ct))


@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
def test_fused_gemm_epilogue_gradients(activation) -> None:
    x, y, b = _r(2, 3), _r(3, 4), _r(4)

    def ref(x, y, b):
        z = x @ y + b
        return {"none": z, "relu": jax.nn.relu(z),
                "gelu": jax.nn.gelu(z, approximate=True)}[activation]

    def ours(x, y, b):
        return fused_gemm_epilogue(x, y, b, activation=activation)

    np.testing.assert_allclose(ours(x, y, b), ref(x, y, b), rtol=1e-12, atol=1e-12)
    h_ours = jax.jit(jax.hessian(lambda *a: jnp.sum(ours(*a) ** 2), argnums=(0, 1, 2)))(x, y, b)
    h_ref = jax.jit(jax.hessian(lambda *a: jnp.sum(ref(*a) ** 2), argnums=(0, 1, 2)))(x, y, b)
    for a, c in zip(jax.tree_util.tree_leaves(h_ours), jax.tree_util.tree_leaves(h_ref)):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-10)


def test_relu_epilogue_kills_gradient_where_inactive() -> None:
    x, y = np.eye(2), np.eye(2)
    b = np.array([-5.0, 5.0])
    g = jax.grad(lambda b: jnp.sum(fused_gemm_epilogue(x, y, b, activation="relu")))(b)
    np.testing.assert_array_equal(g, [0.0, 2.0])


def test_mm_bmm_addmm_linear_values() -> None:
    x, y, bias = _r(2, 3), _r(3, 4), _r(4)
    np.testing.assert_allclose(mm(x, y), x @ y, rtol=1e-12)
    bx, by = _r(2, 2, 3), _r(2, 3, 1)
    np.testing.assert_allclose(bmm(bx, by), bx @ by, rtol=1e-12)
    np.testing.assert_allclose(addmm(bias, x, y, beta=0.5, alpha=2.0), 0.5 * bias + 2 * x @ y,
                               rtol=1e-12)
    np.testing.assert_allclose(linear(x, y, bias), x @ y + bias, rtol=1e-12)
    np.testing.assert_allclose(linear(x, y), x @ y, rtol=1e-12)


FORMS = [  # (op, its own primitive, args, jnp reference); vmapped over x
    (mm, "mm", (_r(2, 3), _r(3, 4)), jnp.matmul),
    (bmm, "bmm", (_r(2, 2, 3), _r(2, 3, 4)), jnp.matmul),
    (lambda b, x, y: addmm(b, x, y, beta=0.5, alpha=-2.0), "addmm",
     (_r(2, 1), _r(2, 3), _r(3, 4)), lambda b, x, y: 0.5 * b - 2.0 * jnp.matmul(x, y)),
    (linear, "linear", (_r(2, 3), _r(3, 4), _r(4)), lambda x, w, b: jnp.matmul(x, w) + b),
    (linear, "linear", (_r(3), _r(3, 4)), jnp.matmul),
]


@pytest.mark.parametrize("fn, name, args, ref", FORMS, ids=[f[1] for f in FORMS])
def test_matmul_forms_are_primitives_of_their_own_to_order_3(fn, name, args, ref) -> None:
    """Each form binds its own primitive (not matmul) forward, in reverse mode
    and under vmap, and its derivatives agree with jnp to order 3."""
    for got, want in zip(_derivatives(fn, args, 3), _derivatives(ref, args, 3)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    loss = lambda *a: jnp.sum(fn(*a) ** 2)  # noqa: E731
    ix = 1 if name == "addmm" else 0
    stacked = tuple(np.stack([a, a]) if i == ix else a for i, a in enumerate(args))
    in_axes = tuple(0 if i == ix else None for i in range(len(args)))
    traced = [(fn, args), (jax.grad(loss, argnums=tuple(range(len(args)))), args),
              (jax.vmap(fn, in_axes=in_axes), stacked)]
    for f, a in traced:
        prims = {e.primitive.name for e in jax.make_jaxpr(f)(*a).eqns}
        assert name in prims and "matmul" not in prims, prims


@pytest.mark.parametrize("in_axes, bound", [
    ((0, None), "mm"), ((None, 1), "mm"), ((0, 2), "bmm")])
def test_mm_batching_folds_into_one_product(in_axes, bound) -> None:
    xb, yb = _r(2, 3, 4), _r(2, 4, 5)   # two examples of x [3, 4] and y [4, 5]
    xs = xb[0] if in_axes[0] is None else np.moveaxis(xb, 0, in_axes[0])
    ys = yb[0] if in_axes[1] is None else np.moveaxis(yb, 0, in_axes[1])
    f = jax.vmap(mm, in_axes=in_axes)
    eqns = [e.primitive.name for e in jax.make_jaxpr(f)(xs, ys).eqns]
    assert eqns.count(bound) == 1 and {"mm", "bmm", "matmul"} & set(eqns) == {bound}
    want = [(xb[0] if in_axes[0] is None else xb[i]) @ (yb[0] if in_axes[1] is None else yb[i])
            for i in range(2)]
    np.testing.assert_allclose(f(xs, ys), np.stack(want), rtol=1e-12)


def _grad_jaxpr_and_check(fn, x, y):
    """The jaxpr of the gradient of ``sum(w * fn(x, y))`` in x and y, after
    checking the gradient against jnp.matmul's."""
    w = _r(*np.shape(np.matmul(x, y)))
    grads = [jax.grad(lambda a, b, f=f: jnp.sum(w * f(a, b)), argnums=(0, 1))
             for f in (fn, lambda a, b: jnp.matmul(a, b, precision="highest"))]
    for got, want in zip(jax.jit(grads[0])(x, y), jax.jit(grads[1])(x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return jax.make_jaxpr(grads[0])(x, y)


@pytest.mark.parametrize("xs, ys", [((6, 5), (5, 1)), ((1, 6), (6, 5))])
def test_mm_transpose_never_copies_the_matrix_of_a_matrix_vector_product(xs, ys) -> None:
    """Issue 12: mm's transpose swaps the vector-shaped cotangent and result,
    not the matrix factor (XLA makes a slow loop of a matrix-vector product
    with a transposed copy of its matrix)."""
    x, y = _r(*xs), _r(*ys)
    eqns = _grad_jaxpr_and_check(mm, x, y).eqns
    swapped = [e.invars[0].aval.size for e in eqns if e.primitive.name == "transpose"]
    assert swapped and max(swapped) < max(x.size, y.size), swapped


def test_matmul_transpose_contracts_the_batch_axes_an_operand_broadcasts_along() -> None:
    """Issue 12: the cotangent of a y shared by a batch of x is one product
    contracting the batch axes (as dot_general's transpose), not a product
    per batch element summed after: nothing larger than x or ct is made."""
    x, y = _r(8, 1, 2, 3), _r(3, 4)
    jaxpr = _grad_jaxpr_and_check(matmul, x, y)
    biggest = max(v.aval.size for e in jaxpr.eqns for v in e.outvars)
    assert biggest <= 8 * 2 * 4, biggest

BAD = [
    (matmul, (_r(2, 3), _r(4, 5)), {}, ValueError, r"gradrules.matmul: inner dimensions.*\(2, 3\)"),
    (matmul, (_r(2, 3), _r(2, 3)), {"transpose_x": False}, ValueError, "inner dimensions"),
    (matmul, (_r(2, 2, 3), _r(3, 3, 4)), {}, ValueError, "do not broadcast"),
    (matmul, (np.float64(1.0), _r(3)), {}, ValueError, "rank >= 1"),
    (matmul, (_r(2, 3), _r(3, 4)), {"transpose_x": 1}, TypeError, "transpose_x must be a bool"),
    (mm, (_r(3), _r(3, 2)), {}, ValueError, "gradrules.mm: argument x must have rank 2"),
    (bmm, (_r(2, 2, 3), _r(3, 3, 4)), {}, ValueError, "gradrules.bmm: batch sizes differ"),
    (addmm, (_r(3, 3), _r(2, 2), _r(2, 3)), {}, ValueError, r"gradrules.addmm: .*\(3, 3\)"),
    (mm, (_r(2, 3), _r(2, 3)), {}, ValueError, r"gradrules.mm: inner dimensions.*\(2, 3\)"),
    (bmm, (_r(2, 3), _r(2, 3, 4)), {}, ValueError, "gradrules.bmm: argument x must have rank 3"),
    (addmm, (_r(3), _r(2, 2), _r(2, 3)), {"beta": "1"}, TypeError,
     "gradrules.addmm: beta must be a Python number"),
    (addmm, (_r(3), _r(2, 2), _r(2, 3)), {"alpha": float("nan")}, ValueError,
     "alpha must be finite"),
    (addmm, (_r(3), _r(2, 2, 2), _r(2, 3)), {}, ValueError, "argument x must have rank 2"),
    (linear, (_r(2, 3), _r(3)), {}, ValueError, "gradrules.linear: argument w must have rank 2"),
    (linear, (_r(2, 3), _r(4, 2)), {}, ValueError, "gradrules.linear: inner dimensions"),
    (linear, (_r(2, 3), _r(3, 2), _r(3)), {}, ValueError,
     r"gradrules.linear: b must have shape \(2,\)"),
    (einsum, ("ij,jk->ik", _r(2, 3)), {}, ValueError, "names 2 operands, got 1"),
    (einsum, ("ij,jk->ik", _r(2, 3), _r(4, 5)), {}, ValueError,
     r"gradrules.einsum: index 'j'.*sizes 3 and 4"),
    (einsum, ("ij->ik", _r(2, 3)), {}, ValueError, "output subscripts"),
    (einsum, ("ij->ii", _r(2, 2)), {}, ValueError, "output subscripts"),
    (einsum, ("ijk->i", _r(2, 3)), {}, ValueError, r"shape \(2, 3\)"),
    (einsum, ("i1->i", _r(2, 3)), {}, ValueError, "bad subscripts"),
    (fused_gemm_epilogue, (_r(2, 3), _r(3, 4), _r(4)), {"activation": "tanh"}, ValueError,
     "activation must be one of"),
    (fused_gemm_epilogue, (_r(2, 3), _r(3, 4), _r(3)), {}, ValueError,
     r"gradrules.fused_gemm_epilogue: bias must have shape \(4,\)"),
    (fused_gemm_epilogue, (_r(2, 3), _r(2, 3, 4), _r(4)), {}, ValueError, "y must be 2-D"),
    (fused_gemm_epilogue, (_r(2, 3), _r(5, 4), _r(4)), {}, ValueError, "inner dimensions"),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, match", BAD,
                         ids=[f"{b[0].__name__}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_raises_at_trace_time(fn, args, kwargs, exc, match) -> None:
    static = [a for a in args if isinstance(a, str)]
    arrays = [a for a in args if not isinstance(a, str)]
    with pytest.raises(exc, match=match):
        jax.eval_shape(lambda *a: fn(*static, *a, **kwargs), *arrays)


def _grad_n(f, n):
    """The gradient of the n-1 times summed-and-differentiated ``f``."""
    for _ in range(n - 1):
        f = (lambda g: lambda b: jnp.sum(jax.grad(g)(b)))(f)
    return jax.grad(f)


@pytest.mark.parametrize("dtype, z, orders", [
    (np.float16, 300.0, (1,)), (np.float32, 30.0, (1, 2, 3)), (np.float64, 30.0, (1, 2, 3))])
def test_gelu_epilogue_derivatives_saturate_like_gelu(dtype, z, orders) -> None:
    """Far in the tails gelu' is exactly 0 or 1 and its higher derivatives 0:
    the epilogue shares gelu's derivative, so no inf * 0 = NaN at any order."""
    from gradrules import gelu
    x, y = np.full((1, 2), 0.5, dtype), np.full((2, 2), 0.5, dtype)
    b0 = np.array([-z, z], dtype)
    fused = lambda b: jnp.sum(fused_gemm_epilogue(x, y, b, activation="gelu"))  # noqa: E731
    plain = lambda b: jnp.sum(gelu(matmul(x, y) + b, approximate=True))  # noqa: E731
    for n in orders:
        got, want = jax.jit(_grad_n(fused, n))(b0), jax.jit(_grad_n(plain, n))(b0)
        assert np.all(np.isfinite(got)), (n, got)
        np.testing.assert_array_equal(got, want)
