"""cross_entropy, fused_linear_cross_entropy, nll_loss and
softmax_cross_entropy: ignore_index on
every token, out-of-range labels eagerly and under jit, -inf logits, the
chunked CPU path against cross_entropy(h @ w), float32 accumulation, memory
of the compiled gradient, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules import _jax
from gradrules.primitives import _loss_xla
from gradrules.core.kernels import Implementation
from gradrules.primitives.loss import (cross_entropy_reference, cross_entropy,
                                       fused_linear_cross_entropy, fused_linear_cross_entropy_p,
                                       nll_loss, softmax_cross_entropy)

from _helpers import mode_costs

rng = np.random.default_rng(0)
LOGITS = rng.normal(size=(5, 7))
LABELS = np.array([0, 6, -100, 3, 3], np.int32)
H = rng.normal(size=(5, 4))
W = rng.normal(size=(4, 7))


def _primitives(fn, *args):
    return {p.name for p, _ in _jax.jaxpr_primitives(jax.make_jaxpr(fn)(*args))}


def _all_close(a, b, tol=1e-10):
    jax.tree_util.tree_map(lambda x, y: np.testing.assert_allclose(x, y, rtol=tol, atol=tol),
                           a, b)


# ------------------------------------------------------------ semantics
@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                    {"label_smoothing": 0.2, "z_loss": 0.01},
                                    {"ignore_index": 3, "reduction": "sum"}])
def test_cross_entropy_matches_the_formula(kwargs) -> None:
    ls, z = kwargs.get("label_smoothing", 0.0), kwargs.get("z_loss", 0.0)
    ignore = kwargs.get("ignore_index", -100)
    labels = np.where(LABELS == -100, 1, LABELS) if ignore != -100 else LABELS
    lse = jax.nn.logsumexp(LOGITS, -1)
    picked = LOGITS[np.arange(5), np.clip(labels, 0, 6)]
    tok = lse + z * lse ** 2 - (1 - ls) * picked - ls * LOGITS.mean(-1)
    tok = np.where(labels != ignore, tok, 0.0)
    want = {"sum": tok.sum(), "none": tok}.get(kwargs.get("reduction"),
                                                tok.sum() / (labels != ignore).sum())
    np.testing.assert_allclose(cross_entropy(LOGITS, labels, **kwargs), want, rtol=1e-12)
    g = jax.grad(lambda x: jnp.sum(cross_entropy(x, labels, **kwargs)))(LOGITS)
    g_ref = jax.grad(lambda x: jnp.sum(cross_entropy_reference(x, labels, **kwargs)))(LOGITS)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-14)


def test_cross_entropy_gradient_is_softmax_minus_smoothed_target() -> None:
    g = jax.grad(lambda x: cross_entropy(x, LABELS, label_smoothing=0.1,
                                         reduction="sum"))(LOGITS)
    target = 0.9 * jax.nn.one_hot(LABELS, 7) + 0.1 / 7
    want = np.where((LABELS != -100)[:, None], jax.nn.softmax(LOGITS) - target, 0.0)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", ["eager", "jit", "jacfwd", "hessian"])
def test_ignore_index_on_every_token_gives_zero(mode) -> None:
    labels = np.full((5,), -100, np.int32)
    fns = {
        "cross_entropy": (lambda x, w: cross_entropy(x, labels), LOGITS),
        "fused_linear_cross_entropy": (lambda h, w: fused_linear_cross_entropy(h, w, labels), H),
        "nll_loss": (lambda x, w: nll_loss(x, labels, weight=w), LOGITS),
    }
    weight = np.ones(7)
    for name, (f, x) in fns.items():
        second = W if name == "fused_linear_cross_entropy" else weight
        if mode == "eager":
            out = [f(x, second), *jax.grad(f, (0, 1))(x, second)]
        elif mode == "jit":
            out = [jax.jit(f)(x, second), *jax.jit(jax.grad(f, (0, 1)))(x, second)]
        elif mode == "jacfwd":
            out = list(jax.jit(jax.jacfwd(f, (0, 1)))(x, second))
        else:
            out = jax.tree_util.tree_leaves(jax.jit(jax.hessian(f, (0, 1)))(x, second))
        for o in out:
            np.testing.assert_array_equal(o, 0.0, err_msg=f"{name} ({mode})")


def test_inf_logits_give_finite_loss_and_gradients() -> None:
    x = LOGITS.copy()
    x[0, 3] = x[1, :5] = -np.inf
    x[2, :] = -np.inf                        # an ignored token whose row is all -inf
    loss = cross_entropy(x, LABELS, z_loss=0.1)
    ref = cross_entropy_reference(x, LABELS, z_loss=0.1)
    np.testing.assert_allclose(loss, ref, rtol=1e-12)
    g = jax.grad(lambda v: cross_entropy(v, LABELS, z_loss=0.1))(x)
    h = jax.jit(jax.hessian(lambda v: cross_entropy(v, LABELS, z_loss=0.1)))(x)
    assert np.isfinite(g).all() and np.isfinite(h).all()
    assert (g[x == -np.inf] == 0).all()


def test_a_label_on_an_inf_logit_has_infinite_loss() -> None:
    x = LOGITS.copy()
    x[0, 0] = -np.inf
    assert cross_entropy(x, LABELS, reduction="none")[0] == np.inf


def test_out_of_range_labels_are_an_error_eagerly_and_nan_under_jit() -> None:
    bad = np.array([0, 7, -100, 3, -2], np.int32)
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: labels must lie in "
                                         r"\[0, 7\) or equal ignore_index=-100; got \[-2, 7\]"):
        cross_entropy(LOGITS, bad)
    with pytest.raises(ValueError, match=r"gradrules\.nll_loss: labels must lie in \[0, 7\)"):
        nll_loss(LOGITS, bad)
    with pytest.raises(ValueError, match=r"fused_linear_cross_entropy: labels must lie"):
        fused_linear_cross_entropy(H, W, bad)
    per_token = np.asarray(jax.jit(lambda x, l: cross_entropy(x, l, reduction="none"))(LOGITS, bad))
    assert np.isnan(per_token[[1, 4]]).all() and np.isfinite(per_token[[0, 2, 3]]).all()
    assert np.isnan(jax.jit(cross_entropy)(LOGITS, bad))
    g = jax.jit(jax.grad(cross_entropy))(LOGITS, bad)
    assert np.isnan(g[1]).all() and np.isfinite(g[0]).all()
    assert np.isnan(jax.jit(fused_linear_cross_entropy)(H, W, bad))
    assert np.isnan(jax.jit(nll_loss)(LOGITS, bad))
    g = np.asarray(jax.jit(jax.grad(lambda x, l: nll_loss(x, l, reduction="sum")))(LOGITS, bad))
    assert np.isnan(g[[1, 4]]).all() and np.isfinite(g[[0, 2, 3]]).all()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_narrow_integer_labels_are_read_as_int32(dtype) -> None:
    """Labels of a dtype that cannot hold the number of classes (300 classes,
    int8 labels) give the losses and gradients of the same labels as int32,
    under jit too: the label arithmetic compares them with 300 and clips
    them to 299 in 32 bits (int8 labels compared all out of range, a NaN
    loss, and nll_loss's clip overflowed)."""
    x = rng.normal(size=(4, 300)).astype(np.float32)
    h, w = rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=(8, 300)).astype(
        np.float32)
    labels = np.array([1, 120, 7, 5], dtype)
    wide = labels.astype(np.int32)
    for fn, args in [(cross_entropy, (x,)), (fused_linear_cross_entropy, (h, w)),
                     (lambda a, l: nll_loss(jax.nn.log_softmax(a), l), (x,))]:
        grad = jax.jit(jax.value_and_grad(lambda *a, f=fn: f(*a[:-1], a[-1])))
        got, want = grad(*args, labels), grad(*args, wide)
        assert np.isfinite(got[0])
        _all_close(got, want, tol=1e-6)


def test_nll_loss_class_weights_and_their_gradient() -> None:
    logp = jax.nn.log_softmax(LOGITS)
    weight = rng.uniform(0.5, 2.0, 7)

    def ref(lp, w):
        valid = LABELS != -100
        wy = np.where(valid, 1.0, 0.0) * w[np.clip(LABELS, 0, 6)]
        return jnp.sum(-wy * lp[np.arange(5), np.clip(LABELS, 0, 6)]) / jnp.sum(wy)

    f = lambda lp, w: nll_loss(lp, LABELS, weight=w)  # noqa: E731
    np.testing.assert_allclose(f(logp, weight), ref(logp, weight), rtol=1e-12)
    _all_close(jax.grad(f, (0, 1))(logp, weight), jax.grad(ref, (0, 1))(logp, weight))
    _all_close(jax.jit(jax.hessian(f, (0, 1)))(logp, weight),
               jax.jit(jax.hessian(ref, (0, 1)))(logp, weight))
    # log-probabilities of 0 (-inf) on classes no label picks stay harmless
    logp_inf = logp.at[0, 1].set(-jnp.inf)
    g = jax.grad(f, (0, 1))(logp_inf, weight)
    assert all(np.isfinite(x).all() for x in g)


@pytest.mark.parametrize("mode", ["forward", "grad"])
def test_nll_loss_reads_one_entry_per_token(mode) -> None:
    """The mean's total weight is a gather of one class weight per token and
    the gradient a scatter of one value per token: bytes and temp memory are
    jax.numpy's (a [tokens, classes] one-hot for the total weight read and
    wrote 3x the bytes and held the one-hot in temp memory). The index
    arithmetic per token is jax.numpy's too: the label clipped once and read
    in range, bad labels masked in one pass (the forward took 1.22x its
    FLOPs and the gradient 1.50x)."""
    from _helpers import mode_costs
    from gradrules.core.registry import get_op
    logp = jnp.asarray(rng.normal(size=(256, 4096)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 4096, 256), jnp.int32)
    (ours, got), (ref, want) = mode_costs(mode, [nll_loss, get_op("nll_loss").reference],
                                          logp, labels)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    assert ours.bytes_accessed <= 1.02 * ref.bytes_accessed, (ours, ref)
    assert ours.temp_bytes <= ref.temp_bytes + 4096, (ours, ref)
    assert ours.flops <= 1.1 * ref.flops, (ours, ref)


# --------------------------------------------- fused_linear_cross_entropy
@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 2 tokens x 3 vocabulary entries: several blocks, both tails."""
    monkeypatch.setattr(_loss_xla, "DEFAULT_BLOCKS", _loss_xla.Blocks(tokens=2, vocab=3))


@pytest.mark.parametrize("kwargs", [{}, {"label_smoothing": 0.2, "z_loss": 0.05},
                                    {"reduction": "none"}])
def test_fused_linear_cross_entropy_is_cross_entropy_of_the_product(small_blocks, kwargs) -> None:
    f = lambda h, w: jnp.sum(fused_linear_cross_entropy(h, w, LABELS, **kwargs))  # noqa: E731
    g = lambda h, w: jnp.sum(cross_entropy(h @ w, LABELS, **kwargs))  # noqa: E731
    assert "blocks=Blocks(tokens=2, vocab=3)" in str(jax.make_jaxpr(f)(H, W))
    np.testing.assert_allclose(f(H, W), g(H, W), rtol=1e-12)
    _all_close(jax.grad(f, (0, 1))(H, W), jax.grad(g, (0, 1))(H, W))
    _all_close(jax.jacfwd(f, (0, 1))(H, W), jax.jacfwd(g, (0, 1))(H, W))
    _all_close(jax.hessian(f, (0, 1))(H, W), jax.hessian(g, (0, 1))(H, W), 1e-9)
    hb = np.stack([H, H[::-1]])
    _all_close(jax.vmap(f, (0, None))(hb, W), jnp.stack([f(H, W), f(H[::-1], W)]))


def test_fused_linear_cross_entropy_without_block_sizes_uses_the_defaults() -> None:
    """An implementation param that carries no block sizes (``blocks=None``)
    runs the chunked lowering with the default sizes for the call's shape."""
    params = dict(ignore_index=-100, label_smoothing=0.0, z_loss=0.0,
                  implementation=Implementation("xla"))
    loss, lse, lse_lo = fused_linear_cross_entropy_p.bind(H, W, LABELS, **params)
    np.testing.assert_allclose(loss, fused_linear_cross_entropy(H, W, LABELS, reduction="none"),
                               rtol=1e-12)
    np.testing.assert_allclose(lse + lse_lo, jax.nn.logsumexp(H @ W, axis=-1), rtol=1e-12)
    assert np.all(np.abs(lse_lo) <= np.spacing(np.abs(lse)))


def test_a_vocabulary_chunk_of_minus_inf_logits_keeps_the_loss_finite(monkeypatch) -> None:
    """With one vocabulary entry per chunk and a first column of -inf logits,
    the online log-sum-exp passes through a chunk where every logit is -inf
    and goes on finite (the max shift of an empty chunk is 0, not -inf - -inf)."""
    monkeypatch.setattr(_loss_xla, "DEFAULT_BLOCKS", _loss_xla.Blocks(tokens=2, vocab=1))
    w = W.copy()
    w[:, 0] = -np.inf
    h = np.abs(H) + 0.1                  # h @ w[:, 0] = -inf for every token
    labels = np.array([1, 6, -100, 3, 3], np.int32)
    got = fused_linear_cross_entropy(h, w, labels, reduction="none")
    want = cross_entropy(h @ w, labels, reduction="none")
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_fused_linear_cross_entropy_derivatives_never_bind_matmul() -> None:
    """grad and jacfwd run the fused backward and tangent map (which primitive
    each binds: tests/test_fused.py), never the logits as a matmul."""
    f = lambda h, w: fused_linear_cross_entropy(h, w, LABELS)  # noqa: E731
    grad = _primitives(jax.grad(f, (0, 1)), H, W)
    assert "fused_linear_cross_entropy_vjp" in grad and "matmul" not in grad
    fwd = _primitives(jax.jacfwd(f, (0, 1)), H, W)
    assert "fused_linear_cross_entropy_jvp" in fwd and "matmul" not in fwd


def _array_shapes(closed):
    """The shapes of every value made in a jaxpr, nested jaxprs included."""
    shapes = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            shapes.update(tuple(v.aval.shape) for v in eqn.outvars)
            for p in eqn.params.values():
                for sub in p if isinstance(p, (tuple, list)) else (p,):
                    inner = getattr(sub, "jaxpr", None)
                    if inner is not None:
                        walk(getattr(inner, "jaxpr", inner))

    walk(closed.jaxpr)
    return shapes


def test_vmap_with_a_shared_w_never_copies_w_per_example() -> None:
    """vmap over h and labels with w shared folds the batch into the tokens:
    no [n, hidden, vocab] array in the forward, the JVP or the gradient, and
    the values match a loop."""
    n = 3
    hb, thb = rng.normal(size=(n, 5, 4)), rng.normal(size=(n, 5, 4))
    tw = rng.normal(size=W.shape)
    lb = np.stack([LABELS, LABELS[::-1], np.roll(LABELS, 1)])
    loss = lambda h, w, l: fused_linear_cross_entropy(h, w, l, reduction="sum")  # noqa: E731
    forward = jax.vmap(loss, (0, None, 0))
    tangent = jax.vmap(lambda h, th, l: jax.jvp(lambda h, w: loss(h, w, l), (h, W),
                                                (th, tw))[1])
    grad = jax.grad(lambda h, w: jnp.sum(forward(h, w, lb)), (0, 1))
    for fn, args in ((forward, (hb, W, lb)), (tangent, (hb, thb, lb)), (grad, (hb, W))):
        assert (n,) + W.shape not in _array_shapes(jax.make_jaxpr(fn)(*args))
    _all_close(forward(hb, W, lb), [loss(hb[i], W, lb[i]) for i in range(n)])
    _all_close(tangent(hb, thb, lb), [jax.jvp(lambda h, w: loss(h, w, lb[i]), (hb[i], W),
                                              (thb[i], tw))[1] for i in range(n)])
    loop = [jax.grad(loss, (0, 1))(hb[i], W, lb[i]) for i in range(n)]
    dh, dw = grad(hb, W)
    _all_close(dh, np.stack([g[0] for g in loop]))
    _all_close(dw, sum(g[1] for g in loop))
    # per-example gradients: dw must come out per example (the backward is not folded)
    _, dw_each = jax.vmap(jax.grad(loss, (0, 1)), (0, None, 0))(hb, W, lb)
    _all_close(dw_each, np.stack([g[1] for g in loop]))


@pytest.mark.parametrize("mode, vocab", [("grad", 16384), ("hvp", 32768)])
def test_derivatives_never_hold_the_logits(mode, vocab) -> None:
    """Compiled temp memory of the gradient and of its JVP (a Hessian-vector
    product: the backward's tangent is blockwise too) stays below a quarter
    of one [tokens, vocab] float32 array (the plain jax.numpy gradient holds
    at least that; the HVP holds a few [tokens, 2048] blocks: logits, their
    tangent, cotangent and its tangent, hence its larger vocabulary)."""
    tokens, hidden = 256, 32
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    h = jax.random.normal(k[0], (tokens, hidden), jnp.float32)
    w = jax.random.normal(k[1], (hidden, vocab), jnp.float32)
    labels = jax.random.randint(k[2], (tokens,), 0, vocab)

    def temp(f):
        grad = jax.grad(f, (0, 1))
        fn = grad if mode == "grad" else lambda h, w: jax.jvp(grad, (h, w), (h, w))[1]
        return jax.jit(fn).lower(h, w).compile().memory_analysis().temp_size_in_bytes

    ours = temp(lambda h, w: fused_linear_cross_entropy(h, w, labels))
    plain = temp(lambda h, w: jnp.mean(jax.nn.logsumexp(h @ w, -1)
                                       - jnp.take_along_axis(h @ w, labels[:, None], -1)[:, 0]))
    logits_bytes = tokens * vocab * 4
    assert plain >= logits_bytes
    assert ours <= logits_bytes // 4, (ours, plain)


def test_cross_entropy_grad_does_no_more_work_than_jax_numpy() -> None:
    """The compiled gradient's FLOPs and bytes (XLA's cost analysis) are the
    plain jax.numpy gradient's: the per-token factors multiply once per logit
    and the label's entry is a scatter of one value per token, not a
    [tokens, vocab] one-hot."""
    logits = jnp.asarray(rng.normal(size=(64, 1024)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 1024, 64), jnp.int32)

    def cost(f):
        c = jax.jit(jax.grad(lambda x: f(x, labels))).lower(logits).compile().cost_analysis()
        c = c[0] if isinstance(c, (list, tuple)) else c
        return c["flops"], c["bytes accessed"]

    (flops, nbytes), (ref_flops, ref_bytes) = cost(cross_entropy), cost(cross_entropy_reference)
    assert flops <= 1.1 * ref_flops and nbytes <= 1.1 * ref_bytes, (flops, ref_flops, nbytes,
                                                                   ref_bytes)


def test_cross_entropy_hvp_takes_one_subtraction_per_probability() -> None:
    """In a Hessian-vector product the backward's tangent recomputes the
    probabilities (it never holds [tokens, vocab] exponentials as jax.numpy
    does) as ``exp(x - lse)`` with ``exp(-lse_lo)`` joined to the per-token
    factors (``loss.token_prob_parts``): 9 FLOPs per logit to jax.numpy's 8,
    where ``exp((x - lse) - lse_lo)`` took 10."""
    x = jnp.asarray(rng.normal(size=(256, 2048)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 2048, 256), jnp.int32)
    (ours, _), (ref, _) = mode_costs("hvp", [lambda a, f=f: f(a, labels, reduction="none")
                                             for f in (cross_entropy, cross_entropy_reference)], x)
    assert ours.flops <= 1.15 * ref.flops, ours.flops / ref.flops


@pytest.mark.parametrize("fn", ["cross_entropy", "fused_linear_cross_entropy"])
def test_bfloat16_accumulates_in_float32(fn) -> None:
    h = jnp.asarray(rng.normal(size=(8, 16)), jnp.bfloat16)
    w = jnp.asarray(rng.normal(size=(16, 512)), jnp.bfloat16)
    labels = rng.integers(0, 512, 8)
    if fn == "cross_entropy":
        x = h @ w
        loss, want = cross_entropy(x, labels), cross_entropy(x.astype(jnp.float32), labels)
        grad = jax.grad(lambda v: cross_entropy(v, labels).astype(jnp.float32))(x)
    else:
        loss = fused_linear_cross_entropy(h, w, labels)
        want = fused_linear_cross_entropy(h.astype(jnp.float32), w.astype(jnp.float32), labels)
        grad = jax.grad(lambda a: fused_linear_cross_entropy(a, w, labels).astype(
            jnp.float32))(h)
    assert loss.dtype == jnp.bfloat16 and grad.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(loss), np.float32(want.astype(jnp.bfloat16)))
    assert np.isfinite(np.asarray(grad, np.float32)).all()


# ------------------------------------------------------------- bad input
def test_bad_labels() -> None:
    with pytest.raises(TypeError, match=r"gradrules\.cross_entropy: argument labels must have "
                                        "an integer dtype, got float"):
        cross_entropy(LOGITS, LABELS.astype(np.float32))
    with pytest.raises(TypeError, match=r"gradrules\.nll_loss: argument labels must have an "
                                        "integer dtype"):
        nll_loss(LOGITS, LABELS.astype(np.float64))
    with pytest.raises(TypeError, match=r"fused_linear_cross_entropy: argument labels must "
                                        "have an integer dtype"):
        fused_linear_cross_entropy(H, W, LABELS.astype(np.float32))
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: labels must have shape "
                                         r"\(5,\) \(logits.shape\[:-1\]\), got \(4,\)"):
        cross_entropy(LOGITS, LABELS[:4])
    with pytest.raises(ValueError, match="labels must have shape"):
        jax.jit(cross_entropy).lower(jax.ShapeDtypeStruct((5, 7), jnp.float32),
                                     jax.ShapeDtypeStruct((3,), jnp.int32))


def test_bad_shapes_and_params() -> None:
    with pytest.raises(ValueError, match=r"gradrules\.fused_linear_cross_entropy: hidden sizes "
                                         r"do not match: h with shape \(5, 4\) has hidden size "
                                         r"4, w with shape \(3, 7\) has 3"):
        fused_linear_cross_entropy(H, W[:3], LABELS)
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: reduction must be one of"):
        cross_entropy(LOGITS, LABELS, reduction="avg")
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: label_smoothing must lie "
                                         r"in \[0.0, 1.0\]"):
        cross_entropy(LOGITS, LABELS, label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: z_loss must lie in"):
        cross_entropy(LOGITS, LABELS, z_loss=-1.0)
    with pytest.raises(TypeError, match=r"gradrules\.cross_entropy: ignore_index must be an "
                                        "int"):
        cross_entropy(LOGITS, LABELS, ignore_index=-1.5)
    with pytest.raises(TypeError, match=r"gradrules\.cross_entropy: argument logits must have "
                                        "a floating dtype"):
        cross_entropy(np.arange(6).reshape(2, 3), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"gradrules\.nll_loss: weight must have shape \(7,\)"):
        nll_loss(LOGITS, LABELS, weight=np.ones(6))
    with pytest.raises(ValueError, match="logits must have a class axis"):
        cross_entropy(np.float64(1.0), np.int32(0))


# --------------------------------------------------------- softmax_cross_entropy
def _optax(logits, labels):
    return -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1)


PROBS = rng.uniform(0.1, 1.0, (5, 7))
PROBS /= PROBS.sum(-1, keepdims=True)


def test_softmax_cross_entropy_is_optaxs_with_both_derivatives() -> None:
    """Per example, no reduction; d/dlogits = sum(labels) softmax - labels,
    d/dlabels = -log_softmax, to the hessian; one-hot labels equal
    cross_entropy(reduction='none')."""
    loss = softmax_cross_entropy(LOGITS, PROBS)
    assert loss.shape == (5,)
    np.testing.assert_allclose(loss, _optax(LOGITS, PROBS), rtol=1e-12)
    scale = 2 * PROBS

    def f(fn):
        return lambda x, y: jnp.sum(jnp.sin(fn(x, y)))

    gx, gy = jax.grad(f(softmax_cross_entropy), (0, 1))(LOGITS, scale)
    wx, wy = jax.grad(f(_optax), (0, 1))(LOGITS, scale)
    np.testing.assert_allclose(gx, wx, rtol=1e-10)
    np.testing.assert_allclose(gy, wy, rtol=1e-10)
    c = np.cos(_optax(LOGITS, scale))[:, None]
    np.testing.assert_allclose(gx, c * (2 * jax.nn.softmax(LOGITS) - scale), rtol=1e-10)
    np.testing.assert_allclose(gy, -c * jax.nn.log_softmax(LOGITS), rtol=1e-10)
    _all_close(jax.jit(jax.hessian(f(softmax_cross_entropy), (0, 1)))(LOGITS[:2], scale[:2]),
               jax.jit(jax.hessian(f(_optax), (0, 1)))(LOGITS[:2], scale[:2]))
    onehot = np.eye(7)[[0, 6, 2, 3, 3]]
    np.testing.assert_allclose(softmax_cross_entropy(LOGITS, onehot),
                               cross_entropy(LOGITS, np.array([0, 6, 2, 3, 3]),
                                             reduction="none"), rtol=1e-12)


def test_softmax_cross_entropy_is_linear_in_the_labels() -> None:
    f = lambda y: softmax_cross_entropy(LOGITS, y)  # noqa: E731
    ct = np.arange(1.0, 6.0)
    (yt,) = jax.linear_transpose(f, PROBS)(ct)
    np.testing.assert_allclose(np.vdot(f(PROBS), ct), np.vdot(PROBS, yt), rtol=1e-12)
    got = jax.vmap(softmax_cross_entropy, in_axes=(None, 0))(LOGITS, np.stack([PROBS, 2 * PROBS]))
    np.testing.assert_allclose(got, [_optax(LOGITS, PROBS), 2 * _optax(LOGITS, PROBS)],
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_softmax_cross_entropy_is_stable_for_huge_logits(dtype) -> None:
    x = jnp.asarray([[3e38, 3e38, -3e38], [1e4, 0.0, -1e4]], dtype)
    y = jnp.asarray([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]], dtype)
    loss = softmax_cross_entropy(x, y)
    assert loss.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(np.asarray(loss, np.float32), [np.log(2.0), 1e4], rtol=1e-2)
    g = jax.grad(lambda a: jnp.sum(softmax_cross_entropy(a, y).astype(jnp.float32)))(x)
    np.testing.assert_allclose(np.asarray(g, np.float32), [[0, 0, 0], [1, -1, 0]], atol=1e-2)


def test_softmax_cross_entropy_leaves_out_minus_inf_logits() -> None:
    """A class whose logit is -inf (its label 0) adds nothing: finite loss
    and derivatives in both operands, never NaN (optax: 0 * -inf)."""
    x = LOGITS.copy()
    x[0, 2] = x[3, :4] = -np.inf
    x[4, :] = -np.inf
    y = PROBS.copy()
    y[0, 2] = 0.0
    y[3, :4] = 0.0
    y[4] = 0.0
    loss = softmax_cross_entropy(x, y)
    finite = np.isfinite(x)
    want = -np.sum(np.where(finite, y * jax.nn.log_softmax(x), 0.0), -1)
    np.testing.assert_allclose(loss, np.where(np.isnan(want), 0.0, want), rtol=1e-12)
    assert loss[4] == 0.0
    f = lambda a, b: jnp.sum(jnp.sin(softmax_cross_entropy(a, b)))  # noqa: E731
    for d in (jax.grad, jax.jacfwd, jax.jacrev, jax.hessian):
        out = jax.jit(d(f, (0, 1)))(x, y)
        assert all(np.isfinite(o).all() for o in jax.tree_util.tree_leaves(out))
    gx, gy = jax.grad(f, (0, 1))(x, y)
    assert np.all(gx[~finite] == 0.0) and np.all(gy[~finite] == 0.0)


def test_softmax_cross_entropy_bad_input() -> None:
    with pytest.raises(ValueError, match=r"gradrules\.softmax_cross_entropy: labels must have "
                                         r"the shape of logits"):
        softmax_cross_entropy(LOGITS, PROBS[:, :3])
    with pytest.raises(ValueError, match=r"gradrules\.softmax_cross_entropy: labels must have"):
        softmax_cross_entropy(np.float64(1.0), np.float64(1.0))
    with pytest.raises(TypeError, match=r"gradrules\.softmax_cross_entropy: argument logits "
                                        r"must have a floating dtype"):
        jax.jit(softmax_cross_entropy)(np.arange(3), np.arange(3))


def test_softmax_cross_entropy_forward_is_one_pass() -> None:
    """The -inf mask and the clamp of the forward are arithmetic
    (``_loss_xla.sce_forward``), which XLA's CPU reduction fusion takes in:
    logits and labels read once, no buffer of their size, as jax.numpy's
    ``-sum(labels * log_softmax(logits))`` (a select wrote the log-softmax
    out: 3x the bytes)."""
    from gradrules.bench import compiled_costs
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((4096, 128)), jnp.float32)
    y = jax.nn.softmax(jnp.asarray(rng.standard_normal((4096, 128)), jnp.float32))
    ours = compiled_costs(softmax_cross_entropy, x, y)
    ref = compiled_costs(lambda a, b: -jnp.sum(b * jax.nn.log_softmax(a), -1), x, y)
    assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed
    assert ours.temp_bytes <= ref.temp_bytes
    np.testing.assert_allclose(softmax_cross_entropy(x, y),
                               -jnp.sum(y * jax.nn.log_softmax(x), -1), rtol=1e-5)


def test_softmax_cross_entropy_hvp_differentiates_the_gradient() -> None:
    """The JVP in the logits is the gradient times their tangent
    (``rules.loss.softmax_cross_entropy_tangent``), so a Hessian-vector
    product differentiates ``s p - y`` in one pass over ``p``: 1.53x
    jax.numpy's FLOPs (which has no mask), where the transposed JVP of
    ``-sum(labels * safe_log_probs)`` took 1.66x."""
    x = jnp.asarray(rng.normal(size=(4096, 128)), jnp.float32)
    y = jax.nn.softmax(jnp.asarray(rng.normal(size=(4096, 128)), jnp.float32))
    (ours, _), (ref, _) = mode_costs("hvp", (softmax_cross_entropy, _optax), x, y, diff=(0, 1))
    assert ours.flops <= 1.6 * ref.flops, ours.flops / ref.flops


def test_softmax_cross_entropy_counts_an_overflowed_log_probability() -> None:
    """A finite logit 6e38 below the row maximum has a log-probability below
    float32's range: with label 0 its term is 0 (not 0 * -inf), with a
    positive label the loss is about label * 3.4e38 (the clamp), never NaN;
    a logit of -inf with label 0 adds nothing."""
    x = jnp.asarray([[3e38, -3e38, 0.0, -jnp.inf]], jnp.float32)
    one, half = (jnp.asarray(y, jnp.float32) for y in ([[1, 0, 0, 0]], [[0.5, 0.5, 0, 0]]))
    assert softmax_cross_entropy(x, one)[0] == 0.0
    big = softmax_cross_entropy(x, half)[0]
    np.testing.assert_allclose(big, 0.5 * 3.4028235e38, rtol=1e-6)


def test_vocab_parallel_cross_entropy_grad_takes_one_exponential_per_logit() -> None:
    """Each shard's forward sums exp(x - its own max), rescaled to the row's
    shift, so that under jit the backward's probabilities reuse those
    exponentials (``parallel._vpce_forward``), and the backward scatters one
    value per token at the label (no iota-compare one-hot): the grad has the
    FLOPs and bytes of the unsharded jax.numpy cross-entropy's."""
    from gradrules.bench import compiled_costs
    from gradrules import vocab_parallel_cross_entropy
    from gradrules.testing.samples.parallel import over_vocab_shards
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((512, 1024)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 1024, 512))
    ours = over_vocab_shards(vocab_parallel_cross_entropy)
    grads = [jax.grad(lambda a, f=f: f(a, labels)) for f in (ours, cross_entropy_reference)]
    c, r = (compiled_costs(g, x) for g in grads)
    assert c.flops <= 1.02 * r.flops
    assert c.bytes_accessed <= 1.02 * r.bytes_accessed
    np.testing.assert_allclose(grads[0](x), grads[1](x), rtol=1e-5, atol=1e-9)
