"""``gradrules explain OP`` and ``gradrules.explain`` (issue 14): an op's
maths, its rules as source with file:line, its derivative jaxprs with the
primitives they bind, and the checker's table; text, Jupyter HTML and a
standalone page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gradrules as gr
from gradrules.cli import main as cli_main
from gradrules.testing.samples import samples_for

ROOT = Path(gr.__file__).parent.parent


def _located_defs(text: str) -> list[tuple[str, str]]:
    """(``path:line``, the source line there) of every ``# path:line`` header."""
    out = []
    for where in re.findall(r"^\s*# (gradrules/\S+\.py:\d+)$", text, re.M):
        path, line = where.rsplit(":", 1)
        out.append((where, (ROOT / path).read_text().splitlines()[int(line) - 1]))
    return out


def test_explain_softmax_from_the_command_line(capsys, tmp_path):
    page = tmp_path / "softmax.html"
    assert cli_main(["explain", "softmax", "--checks", "jit", "--html", str(page)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("softmax (family softmax)\n")
    assert "softmax(x: 'ArrayLike', axis: 'int | tuple[int, ...] | None' = -1" in text  # signature
    assert "diag(y) - y y^T" in text                                   # the docstring's maths
    for prim in ("softmax", "softmax_jvp", "softmax_vjp"):
        assert f"\nprimitive {prim}\n" in text
    assert "-- jvp: forward_jvp(softmax, softmax_jvp" in text
    assert "def softmax_tangent(" in text          # a function the jvp rule binds, as source
    assert "lowering[pallas]: softmax_forward" in text and "Pallas kernel takes:" in text
    located = _located_defs(text)
    assert len(located) > 10
    for where, line in located:
        assert re.match(r"\s*def \w+\(", line), (where, line)
    assert "-- jax.jvp(f, primals, tangents); binds softmax, softmax_jvp\n" in text
    assert "the VJP's backward pass; binds softmax_vjp\n" in text
    assert "(Hessian-vector product); binds " in text
    table = text[text.index("\nchecker\n"):]
    n = len(samples_for("softmax"))          # one jit row per sample
    assert n >= 3 and table.count(" jit ") == n and f"{n} passed, 0 failed" in table
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<h3>checker</h3>" in html
    assert "def softmax_tangent(" in html and "&lt;" not in html.split("<body")[0]


def test_explain_a_linear_op_shows_its_transpose():
    result = gr.explain(gr.pad, run_checks=False)
    assert result.report is None and "\nchecker\n" not in result.text
    assert "linear in: x,value" in result.text
    transpose = re.search(r"-- transpose: (\S+)", result.text)
    assert transpose is not None
    html = result._repr_html_()
    assert "<h3>primitive pad</h3>" in html and "jax.linear_transpose" in html


def test_explain_refuses_what_is_not_an_op(capsys):
    with pytest.raises(TypeError, match="not an op of the catalog"):
        gr.explain(lambda x: x)
    assert cli_main(["explain", "softmx"]) == 2
    assert "did you mean softmax" in capsys.readouterr().err
