"""Properties every fused op shares (DESIGN.md, "Fused ops and kernels"),
one test body each, over the registry: ``jax.grad`` binds the backward
primitive and not the tangent map, ``jax.jacfwd`` the tangent map and not
the backward; the ``implementation`` param follows ``gradrules.config`` and
shows in the jaxpr, a jitted function follows a later change of the config,
and the Pallas kernels that do not exist yet raise NotImplementedError naming
the op. Each op runs on its first sample."""

import jax
import jax.numpy as jnp
import pytest

import gradrules
from gradrules import _jax
from gradrules.core.registry import PRIMITIVES
from gradrules.testing.samples import sample_fn, samples_for

FUSED = [op for op in gradrules.list_ops()            # the fused-op pattern: op, op_jvp, op_vjp
         if [p.name for p in op.primitives[1:3]]
         == [f"{op.primitives[0].name}_jvp", f"{op.primitives[0].name}_vjp"]]
KERNELED = [op for op in gradrules.list_ops()
            if any(PRIMITIVES[p].has_implementation_param for p in op.primitives)]
NO_KERNEL_YET = [op for op in KERNELED
                 if not any("pallas" in PRIMITIVES[p].lowerings for p in op.primitives)]


def _primitives(fn, *args):
    return {p.name for p, _ in _jax.jaxpr_primitives(jax.make_jaxpr(fn)(*args))}


def _call(op):
    """(f, diff_args): the op on its first sample as a function of its
    differentiable array operands, and those operands."""
    sample = samples_for(op.name)[0]
    call = sample_fn(op.name)     # as the checker calls it (inside shard_map, for some)
    args = list(sample.args)
    diff = [i for i, name in enumerate(op.operands[:len(args)]) if name not in op.nondiff]

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return call(*full, **sample.kwargs)

    return f, [args[i] for i in diff]


def test_the_tables_are_not_empty():
    assert {"softmax", "log_softmax", "cross_entropy", "fused_linear_cross_entropy", "rms_norm",
            "layer_norm", "attention", "silu_gated"} <= {op.name for op in FUSED}
    assert "rope" in {op.name for op in KERNELED}


@pytest.mark.parametrize("op", FUSED, ids=lambda op: op.name)
def test_grad_binds_the_backward_and_jacfwd_the_tangent_map(op):
    forward, tangent_map, backward = (p.name for p in op.primitives[:3])
    f, xs = _call(op)
    argnums = tuple(range(len(xs)))
    loss = lambda *a: sum(jnp.sum(jnp.square(o)) for o in jax.tree_util.tree_leaves(f(*a)))  # noqa: E731
    grad = _primitives(jax.grad(loss, argnums), *xs)
    assert {forward, backward} <= grad and tangent_map not in grad, grad
    fwd = _primitives(jax.jacfwd(f, argnums), *xs)
    assert tangent_map in fwd and backward not in fwd, fwd


SECOND_ORDER = [op for op in FUSED if len(op.primitives) > 3]


@pytest.mark.parametrize("op", SECOND_ORDER, ids=lambda op: op.name)
def test_a_hessian_vector_product_binds_the_backwards_tangent(op):
    """An op's fourth primitive, the blockwise tangent of its backward, is
    what a Hessian-vector product binds (never the gradient)."""
    assert {"attention", "fused_linear_cross_entropy"} <= {op.name for op in SECOND_ORDER}
    f, xs = _call(op)
    loss = lambda *a: sum(jnp.sum(jnp.square(o)) for o in jax.tree_util.tree_leaves(f(*a)))  # noqa: E731
    grad = jax.grad(loss, tuple(range(len(xs))))
    hvp = lambda *a: jax.jvp(grad, a, a)[1]                                                   # noqa: E731
    second = op.primitives[3].name
    assert second not in _primitives(grad, *xs) and second in _primitives(hvp, *xs)


@pytest.mark.parametrize("kernel", ["pallas", "interpret"])
@pytest.mark.parametrize("op", NO_KERNEL_YET, ids=lambda op: op.name)
def test_a_pallas_kernel_that_is_not_there_raises(op, kernel):
    f, xs = _call(op)
    assert "Implementation(kernel='auto'" in str(jax.make_jaxpr(f)(*xs))
    with gradrules.config.using(kernel=kernel):
        message = rf"gradrules\.{op.name}: kernel='{kernel}' has no Pallas kernel yet"
        with pytest.raises(NotImplementedError, match=message):
            jax.make_jaxpr(f)(*xs)           # at trace time, before any lowering
        with pytest.raises(NotImplementedError, match=message):
            jax.block_until_ready(f(*xs))
    with gradrules.config.using(kernel="xla"):
        assert "Implementation(kernel='xla'" in str(jax.make_jaxpr(f)(*xs))


def test_a_jitted_function_follows_the_kernel_config():
    """The kernel choice is part of the jit cache key: the same jitted function,
    called again under another choice, is traced again and lowered with it."""
    traced = []

    @jax.jit
    def f(x):
        traced.append(gradrules.config.kernel)
        return gradrules.softmax(x)

    x = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)
    with gradrules.config.using(kernel="xla"):
        want = f(x)
        assert "Implementation(kernel='xla'" in str(jax.make_jaxpr(f)(x))
    assert "Implementation(kernel='auto'" in str(jax.make_jaxpr(f)(x))   # traced again
    f(x)
    with gradrules.config.using(kernel="xla"):
        f(x)                                 # the first trace, from the cache
    with gradrules.config.using(kernel="interpret"):
        with pytest.raises(NotImplementedError, match=r"kernel='interpret': the Pallas kernel "
                           r"does not take this call \(dtype float64"):
            f(x)                             # traced again: softmax asks for its kernel
    assert traced == ["xla", "auto", "interpret"], traced
    assert jnp.allclose(f(x), want)
