"""Bad input, op by op: every op of the sample table, given a complex array,
a string or None where its first array operand goes, raises a TypeError or
ValueError at trace time whose message names the op, eagerly and under
``jax.jit``. (An op made for ``shard_map`` (``OpInfo.call``) is called as it
is with the axis name its wrapper binds: it checks its operands first.)"""

from __future__ import annotations

import numpy as np
import pytest

import jax

from gradrules.core.registry import OPS
from gradrules.testing.samples import largest_sample, opinfo, table
from gradrules.testing.samples.parallel import AXIS

BAD = {"complex": lambda a: a.astype(np.complex64), "string": lambda a: "abc",
       "none": lambda a: None}


def _calls(name):
    """The op's largest sample with its first array operand replaced, per
    kind of bad value."""
    sample = largest_sample(name)
    if sample is None:
        return []
    first = next((i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)), None)
    if first is None:
        return []
    kwargs = dict(sample.kwargs, **({"axis_name": AXIS} if opinfo(name).call else {}))
    calls = []
    for kind, bad in BAD.items():
        args = list(sample.args)
        args[first] = bad(args[first])
        calls.append((kind, args, kwargs))
    return calls


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_every_op_names_itself_for_a_bad_operand(mode):
    unclear = {}
    for name in table():
        fn = OPS[name].fn
        for kind, args, kwargs in _calls(name):
            call = (lambda: fn(*args, **kwargs)) if mode == "eager" else \
                (lambda: jax.eval_shape(lambda: fn(*args, **kwargs)))
            try:
                call()
            except (TypeError, ValueError) as exc:
                if f"gradrules.{name}" not in str(exc):
                    unclear[name, kind] = f"{type(exc).__name__}: {exc}"[:200]
            except Exception as exc:   # noqa: BLE001  (a crash, not a clear error)
                unclear[name, kind] = f"{type(exc).__name__}: {exc}"[:200]
            else:
                unclear[name, kind] = "no error"
    assert not unclear, "\n".join(f"{k}: {v}" for k, v in unclear.items())
