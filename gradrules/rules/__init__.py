"""JVP, transpose and batching rules, one module per family. Importing this
package registers them all."""

from . import arithmetic, compare, convert, reduction, rounding, shape, unary  # noqa: F401
