"""Writing your own ops: the public extension API (``docs/extending.md``).

The analogue of ``torch.library.custom_op`` + ``register_fake`` +
``register_autograd`` + ``register_vmap`` + ``opcheck``, in JAX's own terms,
and the same calls every op of the catalog is made of:

1. ``define_primitive(name, family=, operands=, infer_meta=, impl=)``: a JAX
   primitive with its abstract evaluation (``infer_meta(*avals, **params)``
   returns the output ``ShapedArray``) and its lowering (``impl``, plain
   ``jax.numpy`` / ``lax``, or a composition of gradrules ops);
2. ``register_rules(prim, jvp=, transpose=, batch=, linear=)``: its JVP,
   transpose (for the operands it is ``linear`` in) and batching rules, with
   the contracts below, or the markers ``NOT_DIFFERENTIABLE``,
   ``ZERO_DERIVATIVE`` and ``NOT_LINEAR``;
3. ``define_op(fn, primitives=, reference=)``: the public function in the
   manifest (``gradrules list``), with the plain jax.numpy composition the
   checker compares it with;
4. ``register_samples(name, samples)``: sample calls, after which
   ``gradrules.check(name)`` runs every property check on it.

Rule contracts (the types are those of every rule in the catalog):

* ``jvp(primals, tangents: Sequence[Tangent], **params) -> JvpResult``,
  ``(primal_out, tangent_out)``; a tangent may be a symbolic zero
  (``is_zero``), and so may the one returned (``zero_tangent(out)``).
  Written in gradrules ops, its own derivatives come from the same rules:
  second and third derivatives by composition.
* ``transpose(ct: Cotangent, *operands: MaybeUndefined, **params) -> list``:
  the operands the primitive is linear in arrive as ``UndefinedPrimal``
  (``is_undefined_primal``, their ``.aval``); one cotangent (or ``None``)
  per operand.
* ``batch(args, dims: Sequence[BatchDim], **params) -> BatchResult``,
  ``(out, out_dim)``: ``dims[i]`` is the vmapped axis of ``args[i]`` or
  ``None``; the rule binds the primitive once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                   ShapedArray, Tangent, UndefinedPrimal, Zero, aval_of, is_undefined_primal,
                   is_zero, zero_cotangent, zero_tangent)
from .core.primitive import define_primitive, register_rules
from .core.registry import (NOT_DIFFERENTIABLE, NOT_LINEAR, PRIMITIVES, ZERO_DERIVATIVE, OpDef,
                            register_op)
from .rules._common import add_tangents, bdim_to_front, instantiate, linear_jvp
from .testing.samples import Sample, Tol, register_samples

__all__ = [
    "BatchDim", "BatchResult", "Cotangent", "JvpResult", "MaybeUndefined", "NOT_DIFFERENTIABLE",
    "NOT_LINEAR", "Sample", "ShapedArray", "Tangent", "Tol", "UndefinedPrimal", "Zero",
    "ZERO_DERIVATIVE", "add_tangents", "aval_of", "bdim_to_front", "define_op",
    "define_primitive", "instantiate", "is_undefined_primal", "is_zero", "linear_jvp",
    "register_rules", "register_samples", "zero_cotangent", "zero_tangent",
]


def define_op(fn: Callable[..., Any] | None = None, *, primitives: Sequence[Primitive],
              reference: Callable[..., Any] | None = None, name: str | None = None,
              family: str = "extension", operands: Sequence[str] | None = None,
              linear: Sequence[Sequence[str]] | None = None, nondiff: Sequence[str] = (),
              order: int = 2) -> Any:
    """Add a public function to the manifest as an op; returns ``fn``, so it
    also works as a decorator (``@define_op(primitives=(cube_p,), ...)``).

    ``primitives``: the primitives it binds (made by ``define_primitive``).
    ``reference``: the plain jax.numpy composition computing the same thing,
    which the checker's ``reference`` property compares with (value and
    derivatives up to ``order``). ``operands``: the names of its array
    arguments, by default its positional parameters; they name the leaves in
    the checker's report. ``linear``: the groups of operands it is linear in,
    by default those its one primitive declares in ``register_rules``.
    ``nondiff``: operands that take no tangent (integer indices).
    """
    if fn is None:
        return partial(define_op, primitives=primitives, reference=reference, name=name,
                       family=family, operands=operands, linear=linear, nondiff=nondiff,
                       order=order)
    op_name = name or fn.__name__
    prims = tuple(primitives)
    if not prims:
        raise TypeError(f"define_op({op_name}): give the primitives it binds (primitives=)")
    if operands is None:
        params = inspect.signature(fn).parameters.values()
        operands = tuple(("*" if p.kind == p.VAR_POSITIONAL else "") + p.name for p in params
                         if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                       p.VAR_POSITIONAL))
    if linear is None and len(prims) == 1 and prims[0] in PRIMITIVES:
        names = {o.lstrip("*") for o in operands}
        linear = [g for g in (tuple(n for n in group if n.lstrip("*") in names)
                              for group in PRIMITIVES[prims[0]].linear) if g]
    register_op(OpDef(name=op_name, family=family, fn=fn, primitives=prims,
                      reference=reference, operands=tuple(operands),
                      linear=tuple(tuple(g) for g in linear or ()), nondiff=tuple(nondiff),
                      order=order))
    return fn
