"""The package's structure (issue 9): layers whose imports point down, rules
a reader can grep and find in `gradrules list`, one register_rules call per
primitive in the order of its primitives file, operands named rather than
numbered, small modules, a reproducible checker."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

import gradrules
from gradrules import _jax
from gradrules.cli import main as cli_main
from gradrules.core.families import FAMILIES
from gradrules.core.registry import PRIMITIVES, rule_functions, rule_name

PACKAGE = Path(gradrules.__file__).parent
ROOT = PACKAGE.parent
LAYERS = {"_jax": 0, "core": 1, "pallas": 2, "primitives": 3, "rules": 4, "testing": 5}
TOP = 6          # gradrules/__init__.py, cli, bench, demo
LATE_IMPORTS_ALLOWED = 5
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _dotted(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(dotted: str) -> int:
    parts = dotted.split(".")
    if len(parts) == 1:
        return TOP                                  # the package itself: gradrules/__init__
    return LAYERS.get(parts[1], TOP)


def _imports(path: Path, dotted: str | None = None) -> list[tuple[str, int, bool]]:
    """(imported gradrules module, line, inside a function) of every import of
    the module at ``path`` (named ``dotted``, by default from its path)."""
    tree = ast.parse(path.read_text())
    dotted = dotted or _dotted(path)
    package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.split(".")[0] == "gradrules":
                    for alias in child.names:      # `from . import x` imports module x
                        sub = f"{target}.{alias.name}"
                        is_mod = importlib.util.find_spec(sub) is not None if \
                            _is_package(target) else False
                        out.append((sub if is_mod else target, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "gradrules":
                        out.append((alias.name, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return out


def _is_package(dotted: str) -> bool:
    return (ROOT / dotted.replace(".", "/") / "__init__.py").exists()


def test_imports_point_down():
    """No module imports from a higher layer: _jax < core < pallas < primitives
    < rules < testing < the top-level modules; inside functions too."""
    bad = []
    for path in _modules():
        me = _dotted(path)
        for target, line, _ in _imports(path):
            if _layer(target) > _layer(me):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def _external_imports(path: Path) -> list[str]:
    """Every module name an ``import`` or absolute ``from ... import`` of the
    module at ``path`` names (and, for ``from``, each imported name under it)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize("prefix, owner", [("jax._src", "_jax.py"),
                                           ("jax.experimental.pallas", "pallas/_pallas.py")])
def test_jax_internals_and_pallas_are_imported_in_one_module_each(prefix, owner):
    """JAX internals only in gradrules/_jax.py, Pallas only in
    gradrules/pallas/_pallas.py: the version differences live there."""
    users = {str(path.relative_to(PACKAGE)) for path in _modules()
             if any(n == prefix or n.startswith(prefix + ".") for n in _external_imports(path))}
    assert users == {owner}


def test_few_imports_inside_functions_each_saying_why():
    late = []
    for path in _modules():
        if path.name in ("cli.py", "demo.py", "bench.py") and path.parent == PACKAGE:
            continue
        lines = path.read_text().splitlines()
        for target, line, in_function in _imports(path):
            if in_function:
                text = lines[line - 1] + (lines[line - 2] if line > 1 else "")
                assert "#" in text, f"{path.relative_to(ROOT)}:{line}: say why in a comment"
                late.append(f"{path.relative_to(ROOT)}:{line}")
    assert len(late) <= LATE_IMPORTS_ALLOWED, late


@pytest.mark.parametrize("source, module, found", [
    ("from ..rules import _common  # why", "gradrules.core.probe", "gradrules.rules._common"),
    ("from ..rules._common import instantiate", "gradrules.core.probe",
     "gradrules.rules._common"),
    ("from ...testing import samples", "gradrules.rules.sub.probe", "gradrules.testing.samples"),
    ("from .. import cli", "gradrules.core.probe", "gradrules.cli"),
    ("from .. import testing", "gradrules.rules.probe", "gradrules.testing"),
    ("import gradrules.cli", "gradrules.core.probe", "gradrules.cli"),
    ("from gradrules.rules import softmax", "gradrules.pallas.probe", "gradrules.rules.softmax"),
])
def test_the_import_walker_sees_an_upward_import(tmp_path, source, module, found):
    """The walker itself, on each form of import, inside a function: it names
    the module imported (a module, or the package a name comes from), and
    that module is in a higher layer than the importer."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"def f():\n    {source}\n")
    assert _imports(probe, module) == [(found, 2, True)]
    assert _layer(found) > _layer(module)


def test_no_module_is_too_long():
    long = {str(p.relative_to(ROOT)): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def _own_names(rule: object) -> set[str]:
    """The names a rule may show: those of the defs it is made of (their
    qualified names: ``chain_rule.<locals>.jvp`` gives chain_rule and jvp),
    of the primitives a partial binds, the keywords it sets (its function's
    parameters), and Python's literals."""
    names = {"None", "True", "False"}
    for fn in rule_functions(rule):
        code = getattr(fn, "__code__", None)
        if code is not None:
            names |= set(re.findall(r"[A-Za-z_]\w*", code.co_qualname))
    stack = [rule]
    while stack:
        r = stack.pop()
        if isinstance(r, partial):
            stack.append(r.func)
            names |= set(r.keywords)
            for a in (*r.args, *r.keywords.values()):
                if isinstance(a, _jax.Primitive):
                    names.add(a.name)
                elif callable(a):
                    stack.append(a)
    return names


def test_every_rule_is_a_def_whose_name_is_in_the_source():
    """Registered rules (as listed and as JAX holds them) resolve, through
    partials and wrappers, to defs found in the source, and the names they
    show are made only of those defs' names and the primitives they bind: a
    name built with an f-string (``f"_{prim.name}_jvp"``) fails."""
    bad = []
    for prim, info in PRIMITIVES.items():
        if info.family == "test":
            continue
        held = _jax.registered_rules(prim)
        for kind in ("jvp", "transpose", "batch"):
            for rule in (info.rules.get(kind), held.get(kind)):
                if rule is None or isinstance(rule, str):
                    continue
                for fn in rule_functions(rule):
                    code = getattr(fn, "__code__", None)
                    if code is None:
                        continue
                    src = Path(code.co_filename).read_text()
                    if not re.search(rf"\bdef {re.escape(code.co_name)}\(", src):
                        bad.append(f"{info.name} {kind}: def {code.co_name} not in source")
                shown = rule_name(rule)
                code_part = re.sub(r"'[^']*'|\"[^\"]*\"", "", shown)   # params like ('axis',)
                unknown = set(re.findall(r"[A-Za-z_]\w*", code_part)) - _own_names(rule)
                if unknown:
                    bad.append(f"{info.name} {kind}: {shown!r} names {sorted(unknown)}")
    assert not bad, "\n".join(bad)


def test_the_name_check_catches_a_name_built_from_the_primitive():
    def jvp(primals, tangents):
        return None

    jvp.__name__ = "_sin_jvp"                 # an f-string name, f"_{prim.name}_jvp"
    assert "_sin_jvp" not in _own_names(jvp) and "jvp" in _own_names(jvp)


def test_rule_signatures_use_the_contract_types():
    """JVP rules take ``tangents: Sequence[Tangent]``, batching rules ``dims:
    Sequence[BatchDim]``, transposes a ``Cotangent`` first (after the
    arguments a partial binds)."""
    bad = []
    for info in PRIMITIVES.values():
        if info.family == "test":
            continue
        for kind, param, typ in (("jvp", "tangents", "Tangent"), ("batch", "dims", "BatchDim"),
                                 ("transpose", None, "Cotangent")):
            rule = info.rules.get(kind)
            if rule is None or isinstance(rule, str):
                continue
            fn = rule_functions(rule)[0]
            params = list(inspect.signature(fn).parameters.values())
            bound = len(rule.args) if isinstance(rule, partial) else 0
            p = params[bound] if param is None else inspect.signature(fn).parameters.get(param)
            if p is None or typ not in str(p.annotation):
                bad.append(f"{info.name} {kind}: {fn.__name__}({p})")
    assert not bad, bad


def _register_calls(family: str) -> list[tuple[object, int]]:
    """The primitives of the module-level register_rules calls of a rules
    module, in order; a call anywhere else fails."""
    module = importlib.import_module(f"gradrules.rules.{family}")
    path = Path(module.__file__)
    tree = ast.parse(path.read_text())
    top = {id(stmt.value) for stmt in tree.body if isinstance(stmt, ast.Expr)}
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_rules":
            assert id(node) in top, (f"{path.name}:{node.lineno}: register_rules must be a "
                                     "module-level statement (one call per primitive)")
            prim = eval(compile(ast.Expression(node.args[0]), str(path), "eval"),  # noqa: S307
                        vars(module))
            calls.append((prim, node.lineno))
    return calls


@pytest.mark.parametrize("family", FAMILIES)
def test_rules_are_registered_once_each_in_primitives_order(family):
    defined = [info.prim for info in PRIMITIVES.values() if info.family == family]
    registered = [p for p, _ in _register_calls(family)]
    assert [p.name for p in registered] == [p.name for p in defined]


def test_register_rules_is_called_only_in_the_family_rules_files():
    """No helper registers rules on a family's behalf (rules/_common.py,
    _fused.py, primitives): every call is one a family's rules file makes."""
    allowed = {PACKAGE / "rules" / f"{family}.py" for family in FAMILIES}
    allowed.add(PACKAGE / "core" / "primitive.py")          # where it is defined
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_rules" \
                    and path not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


# ops whose primitive is linear only for some params: their transpose is tested by hand
LINEAR_FOR_SOME_PARAMS = {"scatter_reduce": "reduce='sum' and 'mean' (tests/test_scatter.py)"}


def test_an_op_and_its_primitive_declare_the_same_linear_groups():
    """An op made of one primitive whose operands it shares declares, in its
    manifest row (``OpDef.linear``, which the checker's transpose property
    reads), the linear groups its primitive declares in ``register_rules``,
    leaving out the primitive's operands the op does not take as arrays
    (pad's value, nll_loss's weight)."""
    compared = 0
    for op in gradrules.list_ops():
        if len(op.primitives) != 1:
            continue
        info = op.primitive_infos[0]
        names = {o.lstrip("*") for o in op.operands}
        if not names <= {o.lstrip("*") for o in info.operands}:
            continue                       # other names (take's indices, conv2d's x and w)
        prim = {g for g in (tuple(n for n in group if n.lstrip("*") in names)
                            for group in info.linear) if g}
        if op.name in LINEAR_FOR_SOME_PARAMS:
            assert prim and not op.linear, op.name
            continue
        assert set(op.linear) == prim, (op.name, op.linear, info.linear)
        compared += 1
    assert compared > 100


def test_py_typed_ships():
    assert (PACKAGE / "py.typed").exists()
    assert "py.typed" in (ROOT / "pyproject.toml").read_text()


# ---------------------------------------------------------------- the CLI
def _location_ok(where: str, name: str) -> bool:
    path, line = where.rsplit(":", 1)
    lines = (ROOT / path).read_text().splitlines()
    return bool(re.match(rf"\s*def {re.escape(name)}\(", lines[int(line) - 1]))


def test_list_prints_file_and_line_of_every_rule(capsys):
    assert cli_main(["list", "softmax"]) == 0
    out = capsys.readouterr().out
    op = gradrules.get_op("softmax")
    for info in op.primitive_infos:
        assert f"  {info.name}" in out
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()
            if line.startswith("    ")]
    kinds = [r[0] for r in rows]
    assert kinds.count("jvp") == kinds.count("transpose") == kinds.count("batch") == 3
    checked = 0
    for row in rows:
        for where in (row[2].split(", ") if len(row) > 2 else ()):
            if where.startswith("gradrules/") and ":" in where:
                fn_names = re.findall(r"[A-Za-z_]\w*", row[1])
                assert any(_location_ok(where, n) for n in fn_names), (row, where)
                checked += 1
    assert checked >= 12, out


def test_list_shows_every_op(capsys):
    assert cli_main(["list", *(op.name for op in gradrules.list_ops())]) == 0
    out = capsys.readouterr().out
    shown = {line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")}
    assert shown == {op.name for op in gradrules.list_ops()}


def test_readme_op_list_is_the_registry(capsys):
    """README.md's table of ops is ``gradrules list --markdown`` (regenerate
    it with that command when an op is added)."""
    from gradrules.cli import ops_markdown
    assert cli_main(["list", "--markdown"]) == 0
    table = capsys.readouterr().out
    assert table == ops_markdown() and f"{len(gradrules.list_ops())} ops." in table
    readme = (ROOT / "README.md").read_text()
    begin, end = "<!-- ops: gradrules list --markdown -->\n", "<!-- ops end -->"
    assert readme[readme.index(begin) + len(begin):readme.index(end)] == table


def test_list_a_family(capsys):
    assert cli_main(["list", "rounding"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "floor", "ceil", "round", "trunc"]


def test_a_family_that_shares_its_name_with_an_op(capsys):
    assert cli_main(["list", "gather"]) == 0
    ops = [line.split()[0] for line in capsys.readouterr().out.splitlines()
           if line and not line.startswith(" ")]
    assert ops == ["gather"]
    assert cli_main(["list", "--family", "gather"]) == 0
    ops = [line.split()[0] for line in capsys.readouterr().out.splitlines()
           if line and not line.startswith(" ")]
    assert ops == [op.name for op in gradrules.list_ops("gather")] and len(ops) > 1
    assert cli_main(["list", "--family", "gathr"]) == 2
    assert "no family named 'gathr'; did you mean gather" in capsys.readouterr().err


# ------------------------------------------------------------- the checker
def test_the_checker_draws_the_same_directions_in_every_process():
    """Tangents are seeded from a stable digest of the names, so two processes
    with different string-hash salts report the same errors."""
    code = ("import gradrules; r = gradrules.check('tanh', checks=['fd', 'vmap']);"
            "print([(x.sample, x.check, x.max_abs) for x in r.results])")
    outs = []
    for salt in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=salt)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, cwd=ROOT, check=True)
        outs.append(run.stdout)
    assert outs[0] == outs[1] and "fd" in outs[0]
