"""Property fuzzing of the sample table (``gradrules.testing.fuzz``): for
every op, hypothesis draws a call from the op's own sample function (values
in its domain), reshapes its leading axes (size-0 and size-1 axes, a new
leading axis, broadcasting, an axis counted from the other end), picks a
dtype, and checks the value against the jax.numpy reference, infer_meta
against the real output, jit against eager and vmap against a loop.

The ``ci`` profile (tests/conftest.py, the default) runs one fixed example
per op, an edge case that differs from op to op (about 50 CPU-seconds for
the table). For release checks run the ``long`` profile, 10,000 examples
per op (about an hour of one core per op: spread it over many workers, or
run a part of the table with ``-k``)::

    python -m pytest -n 2 tests/test_fuzz.py --hypothesis-profile=long
    python -m pytest -n 2 tests/test_fuzz.py --hypothesis-profile=long -k "softmax or gather"

A failure prints the falsifying ``Example`` (``Draw 1 (example): ...``):
fix the op, then pin the example in ``PINNED`` below, which runs every time.
"""

import pytest
from hypothesis import given, strategies as st

from gradrules.testing import fuzz
from gradrules.testing.fuzz import Example
from gradrules.testing.samples import table

OPS = sorted(table())

PINNED = [
    ("argmax", Example(234, 1, "float16", "lead=0", 2), "a kept axis of size 0: reshape(-1)"),
    ("argmin", Example(3446082, 2, "float64", "new=2", 0), "vmap over size 0: reshape(-1)"),
    ("take", Example(68, 0, "float64", "lead=0", 0), "empty axis and index: jnp.take's shape"),
    ("take", Example(99024643, 2, "bfloat16", "lead=0", 0), "the same, axis=-1"),
    ("pad", Example(4294967295, 1, "bfloat16", "lead=4", 0), "reflect (0, 0) of a size-0 axis"),
    ("group_norm", Example(510511, 1, "bfloat16", "lead=2", 0), "vmap over size 0: reshape(-1)"),
    ("grid_sample", Example(121645, 0, "float16", "none", 0), "vmap over size 0: reshape(-1)"),
    ("unfold", Example(0, 1, "float32", "none", 0), "vmap over size 0: reshape(-1)"),
    ("fold", Example(3591313, 1, "bfloat16", "none", 0), "vmap over size 0: reshape(-1)"),
    ("norm", Example(6672347, 6, "bfloat16", "one@0", 1), "ord='nuc' of bfloat16: svd"),
    ("sum", Example(106, 0, "int32", "new=2", 1), "int32 summed in int32, jnp.sum in int64"),
    ("prod", Example(121056728, 3, "int32", "new=0", 2), "int32 multiplied in int32"),
    ("trace", Example(154424, 0, "int32", "new=0", 2), "int32 summed in int32"),
    ("topk", Example(0, 2, "bfloat16", "lead=1", 1), "reference: lax.top_k's int32 indices"),
    ("clamp", Example(571522618, 0, "int32", "lead=1", 2), "reference: int x made float"),
    ("clip", Example(4294967295, 0, "int32", "lead=1", 2), "reference: int x made float"),
    ("embedding", Example(4294967294, 1, "int32", "lead=0", 0), "reference: int rows made float"),
    ("c_embedding", Example(214, 1, "int32", "none", 1), "reference: int rows made float"),
    ("scatter_add", Example(63283, 1, "int32", "new=1", 1), "reference: int32 made int64"),
    ("scatter_reduce", Example(24645, 4, "float32", "none", 2), "reference: mean made float64"),
    ("scatter_reduce", Example(1, 0, "int32", "none", 2), "reference: int32 sum made int64"),
    ("index_put", Example(4579, 0, "int32", "one@3", 0), "reference: int x made float"),
    ("unpatchify", Example(4547, 0, "float64", "new=0", 2), "reference: one leading axis"),
]
"""(op, example, what it found): the fuzzer's past failures."""


@pytest.mark.parametrize("name", OPS)
@given(data=st.data())
def test_fuzz(name, data):
    fuzz.check_example(name, data.draw(fuzz.examples(name), label="example"))


@pytest.mark.parametrize("name, example, found", PINNED,
                         ids=[f"{n}-{e.reshape}-{e.dtype}" for n, e, _ in PINNED])
def test_pinned(name, example, found):
    fuzz.check_example(name, example)
