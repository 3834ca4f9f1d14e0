"""The machinery: define_primitive / register_rules validation, the registry
manifest, config, and bad input of the core elementwise ops."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradrules
from gradrules.cli import main as cli_main
from gradrules.core import NOT_LINEAR, define_primitive, register_rules
from gradrules.core.meta import elementwise_meta
from gradrules.primitives import arithmetic as ar
from gradrules.primitives import compare as cmp
from gradrules.primitives import convert as cv
from gradrules.primitives import reduction as red
from gradrules.primitives import shape as sh
from gradrules.primitives import unary as un
from gradrules.testing.check import check


def _toy(name: str):
    return define_primitive(name, family="test", operands=("x",), params=("k",),
                            infer_meta=elementwise_meta(name, ("x",), "float"),
                            impl=lambda x, *, k: x * k)


def test_register_rules_rejects_unknown_rule_names() -> None:
    p = _toy("toy_unknown")
    with pytest.raises(TypeError, match="unknown rule 'jvpp'"):
        register_rules(p, jvpp=lambda primals, tangents, *, k: None)


def test_register_rules_checks_signatures() -> None:
    p = _toy("toy_signature")

    def _toy_transpose(ct, x, y, *, k):  # one operand too many
        return [ct]

    def _toy_batch(args, dims):  # does not take the param k
        return args[0], dims[0]

    def _toy_linear_transpose(ct, x, *, k):
        return [ct * k]

    with pytest.raises(TypeError, match="takes 3 positional arguments, expected 2"):
        register_rules(p, transpose=_toy_transpose)
    with pytest.raises(TypeError, match=r"does not accept params \['k'\]"):
        register_rules(p, batch=_toy_batch)
    with pytest.raises(TypeError, match="is not a marker for jvp"):
        register_rules(p, jvp=NOT_LINEAR)
    with pytest.raises(TypeError, match="a transpose rule needs linear="):
        register_rules(p, transpose=_toy_linear_transpose)
    with pytest.raises(TypeError, match="no operand named 'y'"):
        register_rules(p, transpose=_toy_linear_transpose, linear=("y",))


def test_params_are_validated_at_bind() -> None:
    p = _toy("toy_params")
    with pytest.raises(TypeError, match="toy_params: bad params"):
        p.bind(jnp.ones(2), k=1.0, extra=2)
    with pytest.raises(TypeError, match="not hashable"):
        p.bind(jnp.ones(2), k=[1.0])


def test_manifest_lists_ops_and_rules() -> None:
    op = gradrules.get_op("multiply")
    assert op.linear == (("x",), ("y",))
    info = op.primitive_infos[0]
    assert info.rule_status("jvp").startswith("chain_rule(")
    assert info.rule_status("transpose") == "_multiply_transpose"
    assert gradrules.get_op("assign") is gradrules.get_op("copy")
    assert gradrules.get_op("eq").nondiff == ("x", "y")
    assert {o.name for o in gradrules.list_ops(family="rounding")} == {
        "floor", "ceil", "round", "trunc"}
    with pytest.raises(KeyError, match="no op named 'nope'"):
        gradrules.get_op("nope")


def test_cli_list_missing_prints_only_the_declared_gaps(capsys) -> None:
    """Every rule, reference and sample is there; what --missing prints is
    exactly the derivatives the manifest declares not implemented."""
    assert cli_main(["list", "--missing"]) == 0
    out = capsys.readouterr().out
    declared = [op for op in gradrules.list_ops() if op.not_implemented]
    assert declared == [] and out == ""    # zeta's d/dx, the last one, is written out
    op = gradrules.get_op("polygamma")
    op.not_implemented = ("x",)            # a declared gap is what --missing prints
    try:
        assert cli_main(["list", "--missing"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "polygamma (polygamma): missing d/dx (declared not implemented)"]
    finally:
        op.not_implemented = ()
    assert cli_main(["list"]) == 0
    assert "multiply" in capsys.readouterr().out


def test_cli_check_one_op(capsys) -> None:
    assert cli_main(["check", "neg"]) == 0
    assert "1 ops" in capsys.readouterr().out


def test_config_kernel_choice() -> None:
    assert gradrules.config.kernel == "auto"
    with gradrules.config.using(kernel="interpret"):
        assert gradrules.config.kernel == "interpret"
    assert gradrules.config.kernel == "auto"
    with pytest.raises(ValueError, match="kernel must be one of"):
        gradrules.config.set_kernel("cuda")
    gradrules.config.kernel = "xla"          # the whole process, like set_kernel
    try:
        assert gradrules.config.kernel == "xla"
        with gradrules.config.using(kernel="auto"):
            assert gradrules.config.kernel == "auto"
        assert gradrules.config.kernel == "xla"
    finally:
        gradrules.config.set_kernel("auto")
    assert gradrules.config.kernel == "auto"


def test_check_reports_a_wrong_rule() -> None:
    """A primitive whose JVP is off by a factor is caught by the fd check."""
    p = define_primitive("toy_wrong", family="test", operands=("x",),
                         infer_meta=elementwise_meta("toy_wrong", ("x",), "float"), impl=jnp.sin)

    def _toy_wrong_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return p.bind(x), ar.multiply(t, ar.multiply(un.cos(x), 1.01))

    register_rules(p, jvp=_toy_wrong_jvp)
    report = check(p.bind, np.linspace(-1, 1, 4), checks=["fd", "jit"])
    rows = {r.check: r for r in report.results}
    assert rows["jit"].status == "pass"
    assert rows["fd"].status == "FAIL" and "finite differences" in rows["fd"].detail
    with pytest.raises(AssertionError, match="gradrules.check failed"):
        report.raise_if_failed()
    assert "<table>" in report._repr_html_()


def test_check_reports_a_foreign_primitive() -> None:
    def f(x):
        return ar.multiply(jnp.sin(x), x)   # jnp.sin is not a catalog primitive

    report = check(f, np.linspace(-1, 1, 3), checks=["closure"])
    assert not report.passed
    assert "sin" in report.failures[0].detail


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("fn", [ar.add, ar.multiply, ar.maximum, ar.pow, ar.atan2, cmp.lt])
def test_shapes_that_do_not_broadcast(fn) -> None:
    with pytest.raises(ValueError, match=r"gradrules\.\w+: operands do not broadcast: "
                                         r"x with shape \(2, 3\), y with shape \(4,\)"):
        fn(jnp.ones((2, 3)), jnp.ones((4,)))


@pytest.mark.parametrize("fn", [un.sin, un.exp, un.log, un.sqrt, un.tanh, ar.divide])
def test_integer_input_where_floats_are_needed(fn) -> None:
    args = (jnp.arange(3),) * (2 if fn is ar.divide else 1)
    with pytest.raises(TypeError, match=r"gradrules\.\w+: argument x must have a floating "
                                        r"dtype, got int"):
        fn(*args)


@pytest.mark.parametrize("fn", [un.sin, un.abs, ar.add, cmp.eq])
def test_complex_input(fn) -> None:
    z = jnp.ones(3, jnp.complex64)
    args = (z,) * (1 if fn in (un.sin, un.abs) else 2)
    with pytest.raises(TypeError, match="complex input is not supported"):
        fn(*args)


def test_invalid_params() -> None:
    with pytest.raises(ValueError, match="div_scale: scale must be nonzero"):
        ar.div_scale(jnp.ones(2), scale=0.0)
    with pytest.raises(TypeError, match="scale: scale must be a Python number"):
        ar.scale(jnp.ones(2), scale=jnp.ones(2))
    with pytest.raises(ValueError, match=r"bias_add: bias must have shape \(x.shape\[-1\],\)"):
        ar.bias_add(jnp.ones((2, 3)), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"add: axis=2 does not place y"):
        ar.add(jnp.ones((2, 3)), jnp.ones((3,)), axis=2)
    with pytest.raises(TypeError, match="where: argument cond must have bool"):
        cmp.where(jnp.ones(2), jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape x with shape \(2, 3\)"):
        sh.reshape(jnp.ones((2, 3)), (4,))
    with pytest.raises(ValueError, match=r"sum: axis=2 is out of range"):
        red.sum(jnp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="dtype 'banana' is not a dtype"):
        cv.convert_element_type(jnp.ones(2), dtype="banana")
    with pytest.raises(TypeError, match=r"add: argument x must be an array or a scalar, got str"):
        ar.add("a", 1.0)


def test_errors_are_raised_at_trace_time() -> None:
    with pytest.raises(ValueError, match="operands do not broadcast"):
        jax.jit(ar.add).lower(jax.ShapeDtypeStruct((2, 3), jnp.float32),
                              jax.ShapeDtypeStruct((4,), jnp.float32))


# ------------------------------------------------- documented derivatives
def test_maximum_minimum_ties_split_evenly() -> None:
    x = jnp.array([1.0, 2.0, 3.0])
    y = jnp.array([1.0, 0.0, 5.0])
    gx, gy = jax.grad(lambda a, b: red.sum(ar.maximum(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.5, 0.0, 1.0])
    gx, gy = jax.grad(lambda a, b: red.sum(ar.minimum(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 1.0, 0.0])


def test_abs_and_sign_at_zero() -> None:
    assert jax.grad(un.abs)(0.0) == 0.0
    assert jax.grad(un.sign)(0.0) == 0.0
    assert jax.jacfwd(un.abs)(jnp.array([-2.0, 0.0, 3.0])).tolist() == [
        [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


def test_pow_edges_are_finite() -> None:
    g = jax.grad(lambda x, y: ar.pow(x, y), argnums=(0, 1))
    dx, dy = g(0.0, 2.0)
    assert dx == 0.0 and dy == 0.0
    dx, dy = g(0.0, 0.0)
    assert dx == 0.0 and dy == 0.0
    h = jax.hessian(lambda x: ar.pow(x, 3.0))(0.0)
    assert h == 0.0


def test_comparisons_have_float0_tangents() -> None:
    _, t = jax.jvp(lambda x: cmp.lt(x, 0.5), (jnp.ones(3),), (jnp.ones(3),))
    assert t.dtype == jax.dtypes.float0


def test_python_scalars_promote_like_jax_numpy() -> None:
    x = jnp.ones(3, jnp.float16)
    assert ar.add(x, 2.0).dtype == jnp.float16
    assert ar.multiply(x, jnp.ones(3, jnp.float32)).dtype == jnp.float32
    assert ar.add(2.0, 3.0).aval.weak_type


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_dtypes_are_kept(dtype) -> None:
    x = jnp.linspace(0.1, 1.0, 4, dtype=dtype)
    for fn in (un.exp, un.sqrt, un.sin):
        assert fn(x).dtype == x.dtype
        assert jax.grad(lambda v: red.sum(fn(v)))(x).dtype == x.dtype


def test_jax_export_round_trip() -> None:
    def f(x, y):
        return red.sum(ar.multiply(un.sin(x), y))

    x, y = jnp.linspace(0.0, 1.0, 4), jnp.linspace(1.0, 2.0, 4)
    exported = jax.export.export(jax.jit(jax.grad(f)))(x, y)
    restored = jax.export.deserialize(exported.serialize())
    np.testing.assert_allclose(restored.call(x, y), jax.grad(f)(x, y))


def test_bench_compares_the_fused_ops_against_jax_numpy(capsys) -> None:
    """``gradrules bench --quick --op ...``: every mode of each case beside
    plain jax.numpy, finite ratios, progress on stderr, then the summary."""
    assert cli_main(["bench", "--quick", "--op", "softmax", "attention causal"]) == 0
    out, err = capsys.readouterr()
    table, _, tail = out.partition("\n\n")
    names = [line.split("  ")[0] for line in table.splitlines()[2:]]
    assert names == [f"{op} {mode}" for op in ("softmax", "attention causal")
                     for mode in ("forward", "grad", "hvp")]
    assert "nan" not in out and "gradrules bench: attention causal hvp" in err
    assert "median time ratio, hvp:" in tail and "rows that fall short" in tail
    assert cli_main(["bench", "--op", "softmx"]) == 2
    assert "did you mean softmax" in capsys.readouterr().err
    assert cli_main(["bench", "--family", "pol"]) == 2
    assert "did you mean pool" in capsys.readouterr().err


def test_bench_covers_the_catalog_and_writes_json(capsys) -> None:
    """Every op with samples and a reference has a case; ``--family`` picks
    a family's (catalog cases grown from the sample table included, modes
    that do not apply left out); ``--json`` gives every measurement."""
    from gradrules.bench import all_cases
    from gradrules.core.registry import OPS
    from gradrules.testing.samples import table
    covered = {c.op for c in all_cases()}
    assert {n for n, op in OPS.items() if op.reference is not None and n in table()} <= covered
    assert cli_main(["bench", "--quick", "--json", "--family", "compare", "rounding"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"eq forward", "floor forward", "floor grad"} <= names and "eq grad" not in names
    for r in rows:
        assert r["flops"] >= 0 and r["compile_s"] > 0 and r["ref_compile_s"] > 0
        q1, q3 = r["time_ratio_quartiles"]
        assert q1 <= r["time_ratio"] <= q3 and isinstance(r["shortfalls"], list)


def test_catalog_cases_grow_the_sample_and_keep_fixed_shapes() -> None:
    """A catalog case tiles its largest sample up to about CATALOG_ELEMENTS
    (axes of size 1 stay, so broadcasting holds); an op whose params fix
    every size but a batch of one (conv3d, patchify) grows that batch; an op
    whose params fix a shape (reshape) keeps its sample's size."""
    from gradrules.bench import CATALOG_ELEMENTS, catalog_cases
    from gradrules.testing.samples import largest_sample
    cases = {c.name: c for c in catalog_cases()}
    rng = np.random.default_rng(0)
    (x, y), quick = cases["add"].make(rng, False), cases["add"].make(rng, True)
    assert CATALOG_ELEMENTS / 4 <= max(x.size, y.size) <= CATALOG_ELEMENTS
    def arrays(name):
        return [a.shape for a in largest_sample(name).args if isinstance(a, np.ndarray)]
    sample = arrays("add")
    assert [a.shape for a in quick] == sample          # --quick: the sample itself
    for big, small in zip((x, y), sample):            # size-1 axes stay 1
        assert [b == 1 for b in big.shape] == [s == 1 for s in small]
    reshape = cases["reshape"].make(rng, False)
    assert [a.shape for a in reshape] == arrays("reshape")
    for name in ("conv3d", "patchify"):
        grown, sample = [a.shape for a in cases[name].make(rng, False)], arrays(name)
        assert sample[0][0] == 1 and grown[0][0] * np.prod(grown[0][1:]) >= CATALOG_ELEMENTS / 4
        assert [g[1:] for g in grown] == [a[1:] for a in sample], (grown, sample)


def test_hand_sized_bench_cases_are_the_same_computation_on_both_sides() -> None:
    """Every hand-sized case (``BENCH_CASES``, at its ``--quick`` size) gives
    gradrules and its reference the same output shapes and dtypes, and the
    arguments it differentiates are float arrays."""
    from gradrules.bench import BENCH_CASES, _functions
    rng = np.random.default_rng(0)
    for case in BENCH_CASES:
        ours, ref = _functions(case)
        args = case.make(rng, True)
        shapes = [jax.tree_util.tree_map(lambda o: (o.shape, o.dtype), jax.eval_shape(f, *args))
                  for f in (ours, ref)]
        assert shapes[0] == shapes[1], (case.name, shapes)
        assert all(jnp.issubdtype(args[i].dtype, jnp.floating) for i in case.diff), case.name


def test_bench_runs_the_lapack_solves_on_one_matrix() -> None:
    """The solve family (LU, Cholesky, triangular solves, QR) is benched on
    one matrix, never a stack: jaxlib 0.10.2's batched LAPACK kernels fan a
    stack out into XLA's intra-op pool and wait for it, and two such calls in
    flight deadlock a two-worker pool (README), which hung the catalog run
    on triangular_solve, solve and qr when their samples were grown."""
    from gradrules.bench import all_cases
    from gradrules.core.registry import OPS
    rng = np.random.default_rng(0)
    cases = [c for c in all_cases() if c.op in OPS and OPS[c.op].family == "solve"]
    assert {"triangular_solve", "solve", "qr", "cholesky"} <= {c.op for c in cases}
    for case in cases:
        shapes = [np.shape(a) for a in case.make(rng, False)]
        assert all(len(s) <= 2 for s in shapes) and max(map(len, shapes)) == 2, (case.name,
                                                                                shapes)


def test_a_bench_row_that_fails_is_reported_and_the_run_goes_on() -> None:
    from gradrules.bench import BenchCase, bench_rows, summary
    bad = BenchCase("bad add", "add", lambda rng, quick: (jnp.ones(3), jnp.ones(4)),
                    diff=(0, 1))
    good = BenchCase("good add", "add", lambda rng, quick: (jnp.ones(3), jnp.ones(3)),
                     diff=(0, 1))
    failures: list = []
    rows = bench_rows([bad, good], quick=True, repeats=3, failures=failures)
    assert [r.name for r in rows] == ["good add forward", "good add grad", "good add hvp"]
    assert [name for name, _ in failures] == ["bad add forward", "bad add grad", "bad add hvp"]
    assert all("ValueError" in why and "add" in why for _, why in failures)
    assert "rows that failed to run: 3" in summary(rows, failures)
    with pytest.raises(ValueError):
        bench_rows([bad], quick=True, repeats=3)


def test_bench_shortfalls_name_what_falls_short() -> None:
    from gradrules.bench import BenchRow, summary
    ok = BenchRow("a grad", 1.0, 1.0, 0, 0, 1.0, 1.0, 10.0, 10.0, 0.1, 0.1, (0.9, 1.0, 1.1))
    noisy = BenchRow("b grad", 1.3, 1.0, 0, 0, 1.0, 1.0, 10.0, 10.0, 0.1, 0.1, (0.95, 1.3, 1.6))
    slow = BenchRow("c grad", 2.0, 1.0, 3 << 20, 1 << 20, 4.0, 1.0, 20.0, 10.0, 0.1, 0.1,
                    (1.8, 2.0, 2.2))
    assert ok.shortfalls() == [] and noisy.shortfalls() == []
    assert slow.shortfalls() == ["time 2.00x", "bytes 2.00x", "flops 4.00x", "temp +2.0 MiB"]
    text = summary([ok, noisy, slow])
    assert "median time ratio, grad: 1.30 (3 rows)" in text
    assert "1 of 3" in text and "c grad: time 2.00x" in text


def test_bench_ratios_of_zero_are_not_nan() -> None:
    from gradrules.bench import BenchRow, ratio
    assert ratio(0, 0) == 1.0 and ratio(2.0, 0) == float("inf") and ratio(1.0, 4.0) == 0.25
    row = BenchRow("x", 1e-3, 2e-3, 0, 0, 0.0, 10.0)
    assert (row.time_ratio, row.mem_ratio, row.flops_ratio) == (0.5, 1.0, 0.0)


def test_bench_does_not_compare_work_a_while_loop_hides() -> None:
    """XLA's cost analysis counts a loop body once: a lax.scan's FLOPs and
    bytes are those of one step, so a row with a loop on either side is
    not judged on them (``BenchRow.work_counted``), only on time and memory."""
    from jax import lax
    from gradrules.bench import BenchRow, compiled_costs, format_table, summary
    x = jnp.ones((64, 8), jnp.float32)
    scan = compiled_costs(lambda v: lax.scan(lambda c, r: (c * r, c), x[0], v)[1], x)
    plain = compiled_costs(lambda v: v * 2.0, x)
    assert scan.loops == 1 and plain.loops == 0
    looped = BenchRow("l grad", 1.0, 1.0, 0, 0, 5000.0, 1.0, 30.0, 10.0, 0.1, 0.1,
                      (0.9, 1.0, 1.1), (0, 1))
    assert not looped.work_counted and looped.shortfalls() == []
    assert "loop" in format_table([looped])
    assert "rows with a while loop, bytes and flops not compared: 1 (l grad)" in summary([looped])
