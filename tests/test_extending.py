"""The public extension API (issue 14): docs/extending.md's worked example
runs as written, and the checker tells the truth on ordinary input.

Ops of a user's own are registered in a fresh interpreter (a subprocess), so
the registry the other tests walk stays gradrules' own."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

import gradrules as gr
from gradrules import extend

DOC = Path(__file__).parent.parent / "docs" / "extending.md"


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_worked_example_runs_as_written():
    """Every python block of docs/extending.md, in order, in one interpreter:
    cube and forward_diff pass every check, the broken JVP is caught."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 6
    out = _run("\n\n".join(blocks))
    assert "cube  float64[2, 3]  fd  " in re.sub(r" {2,}", "  ", out)
    assert "forward_diff" in out and "FAIL" in out       # the broken rule, reported


def test_what_a_user_needs_is_public():
    """Everything the extension API names is exported from gradrules itself,
    under its own name, and none of it is a private name."""
    for name in extend.__all__:
        assert getattr(gr, name) is getattr(extend, name), name
        assert not name.startswith("_")


def test_an_op_without_samples_says_how_to_add_them():
    out = _run(textwrap.dedent("""
        import jax.numpy as jnp, gradrules as gr
        p = gr.define_primitive("twice", family="extension", operands=("x",),
                                infer_meta=lambda x: x, impl=lambda x: 2 * x)
        gr.define_op(lambda x: p.bind(x), primitives=(p,), name="twice")
        try:
            gr.check("twice")
        except ValueError as e:
            print(e)
        try:
            gr.register_samples("twise", [])
        except KeyError as e:
            print(e)
    """))
    assert "op 'twice' has no samples" in out and "gradrules.register_samples('twice'" in out
    assert "no op named 'twise'; did you mean twice" in out


def test_float32_input_is_checked_in_float64():
    """Finite differences of a float32 sample are taken in float64 (as the
    sample table's are), so a correct rule passes."""
    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    report = gr.check(gr.sin, x)
    report.raise_if_failed()
    fd = [r for r in report.results if r.check == "fd"]
    assert fd and fd[0].status == "pass" and fd[0].sample == "float32[2, 3] (in float64)"
    assert gr.check(gr.multiply, x.astype(jnp.bfloat16), np.float16(3) * np.ones(3, np.float16),
                    checks=["fd", "reference"]).passed


def test_a_plain_function_gets_na_not_fail_where_nothing_applies():
    """No reference, no linearity, no gradrules op at all: n/a, with why."""
    report = gr.check(lambda v: jnp.sin(v) * v, np.linspace(-1, 1, 5))
    report.raise_if_failed()
    status = {r.check: (r.status, r.detail) for r in report.results}
    assert status["reference"][0] == "n/a" and "no reference" in status["reference"][1]
    assert status["closure"][0] == "n/a" and "sin" in status["closure"][1]
    assert status["fd"][0] == status["vmap"][0] == "pass"


def test_a_function_of_gradrules_ops_is_checked_for_closure():
    report = gr.check(lambda v: gr.multiply(gr.sin(v), v), np.linspace(-1, 1, 5),
                      checks=["closure"])
    assert [r.status for r in report.results] == ["pass"]


def test_a_wrong_rule_in_a_plain_function_still_fails():
    """n/a is only for what does not apply: a function whose derivative is
    wrong (a custom_jvp that forgets a factor) fails the fd check."""
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def _f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), 0.5 * jnp.cos(x) * t

    report = gr.check(f, np.linspace(-1, 1, 5), checks=["fd"])
    assert not report.passed


def test_defaults_that_differ_from_jax_numpy_are_said_where_they_are():
    """Every op of the README's table of deliberate differences from
    jax.numpy says so in its docstring, naming the jax counterpart."""
    readme = (DOC.parent.parent / "README.md").read_text()
    table = readme[readme.index("## Where gradrules differs from jax.numpy"):]
    table = table[:table.index("\n## ")]
    rows = re.findall(r"^\| `(\w+)[^`]*`(?:, `(\w+)`)?(?:, `(\w+)`)?", table, re.M)
    names = [n for row in rows for n in row if n and n != "op"]
    assert {"var", "std", "gelu", "sort", "topk", "max_pool2d", "attention"} <= set(names)
    for name in names:
        doc = getattr(gr, name).__doc__
        assert re.search(r"jnp\.|jax\.nn\.|jax\.scipy\.|lax\.|jax\.numpy|optax|as ``var``|those of var", doc), name
