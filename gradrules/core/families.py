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
    "unary",
    "special",
    "activation",
    "logical",
    "scan",
    "sort",
    "gather",
    "scatter",
    "layout",
    "slicing",
    "linalg",
    "conv",
    "pool",
    "resample",
    "softmax",
    "loss",
    "norm",
    "attention",
    "rope",
    "gated",
    "random",
)
