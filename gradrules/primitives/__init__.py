"""Primitives, their abstract eval and reference lowering, and the public
functions. Importing this package registers every family."""

from . import arithmetic, compare, convert, reduction, rounding, shape, unary  # noqa: F401
