"""Helpers shared by the family test files."""

import re

import jax
import numpy as np
import pytest

from gradrules.primitives import reduction as red


def vjp_of(fn, x, w=None):
    """The cotangent of x for the cotangent w (default 1, 2, 3, ...) of fn(x),
    and that w."""
    out, pullback = jax.vjp(fn, x)
    w = np.arange(1.0, 1.0 + np.size(out)).reshape(np.shape(out)) if w is None else w
    return pullback(w)[0], w


def grad_of(fn, *args, argnums=0):
    """Gradient of sum(w * fn(...)) for a fixed weight w."""
    out = fn(*args)
    w = np.arange(1.0, 1.0 + np.size(out)).reshape(np.shape(out))
    return jax.grad(lambda *a: red.sum(fn(*a) * w), argnums=argnums)(*args), w


def check_index_dtype_rejected(op, fn, arg, dtype, shape):
    """fn(index), for an index array of ``shape`` and the float or bool
    ``dtype``, raises gradrules.<op>'s TypeError naming the argument ``arg``."""
    with pytest.raises(TypeError, match=rf"gradrules.{op}: argument {arg} must have an "
                                        r"integer dtype"):
        fn(np.zeros(shape, dtype))


def count_bound(fn, *args, name):
    """How many times the top level of fn's jaxpr binds the primitive ``name``."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    return sum(e.primitive.name == name for e in jaxpr.jaxpr.eqns)


def reduced_extents(fn, *args):
    """The extents of the axes that each reduction of ``jax.jit(fn)``'s
    lowered module reduces over, one tuple per reduction."""
    extents = []
    for dims, shape in re.findall(r"across dimensions = \[([0-9, ]*)\] : \(tensor<([0-9x]*)x?\w+>",
                                  jax.jit(fn).lower(*args).as_text()):
        sizes = [int(n) for n in shape.split("x") if n]
        extents.append(tuple(sizes[int(d)] for d in dims.split(",") if d.strip()))
    return extents


def check_vmap_binds_once(name, fn, args):
    """vmap of fn over batched data and indices binds ``name`` once and
    matches a Python loop."""
    vfn = jax.vmap(fn)
    assert count_bound(vfn, *args, name=name) == 1
    loop = np.stack([fn(*[a[b] for a in args]) for b in range(2)])
    np.testing.assert_array_equal(vfn(*args), loop)


def mode_costs(mode, fns, *args, diff=(0,)):
    """For each of ``fns`` (gradrules' and jax.numpy's), in ``mode`` ("grad":
    the gradient of sum(w * out) in the arguments at ``diff``; "hvp": its JVP)
    built as ``gradrules bench`` builds it (``bench.mode_function``: weights
    and tangents are arguments, so XLA folds nothing away): its compiled
    costs (``bench.compiled_costs``) and its value, jitted."""
    from gradrules.bench import compiled_costs, mode_function
    out = []
    for f in fns:
        fn, extra = mode_function(f, mode, args, diff)
        out.append((compiled_costs(fn, *args, *extra), jax.jit(fn)(*args, *extra)))
    return out


def check_symbolic_export(fn, shape, sizes, rng, symbol):
    """The value and gradient of ``sum(out ** 2)`` over fn's outputs, jitted
    and exported once for x of the symbolic ``shape`` (text, in ``symbol``),
    equal the direct computation at each of ``sizes`` of the symbol."""
    def loss(x):
        return sum(red.sum(o * o) for o in jax.tree_util.tree_leaves(fn(x)))
    program = jax.jit(jax.value_and_grad(loss))
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(shape), np.float32)
    exported = jax.export.export(program)(spec)
    for n in sizes:
        dims = [eval(d, {symbol: n}) for d in shape.split(",")]  # noqa: S307
        x = rng.uniform(-1, 1, dims).astype(np.float32)
        for got, want in zip(exported.call(x), program(x)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
