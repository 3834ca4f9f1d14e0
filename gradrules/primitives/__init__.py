"""Primitives, their abstract eval and reference lowering, and the public
functions. Importing this package registers every family (order matters
only in that a family imports the ones it builds on)."""

from . import (  # noqa: F401
    arithmetic,
    compare,
    convert,
    reduction,
    rounding,
    shape,
    unary,
    special,
    activation,
    logical,
    scan,
    sort,
    layout,
    indexing,
    linalg,
    conv,
    pool,
    resample,
    softmax,
    loss,
    norm,
    attention,
    rope,
    gated,
    random,
)
