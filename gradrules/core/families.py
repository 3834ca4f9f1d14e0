"""The op families, in import order (a family imports the ones it builds on).

The same family name names a file in ``primitives/``, ``rules/`` and
``testing/samples/``; each of those packages imports its modules from here.
"""

FAMILIES: tuple[str, ...] = (
    "arithmetic",
    "compare",
    "convert",
    "reduction",
    "rounding",
    "shape",
    "creation",
    "unary",
    "special",
    "activation",
    "logical",
    "scan",
    "sort",
    "gather",
    "scatter",
    "segment",
    "layout",
    "strided",
    "slicing",
    "linalg",
    "solve",
    "products",
    "matrix",
    "spectral",
    "conv",
    "pool",
    "resample",
    "grid",
    "im2col",
    "softmax",
    "loss",
    "norm",
    "attention",
    "rope",
    "gated",
    "random",
)
