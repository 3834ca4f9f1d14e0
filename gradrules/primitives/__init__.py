"""Primitives, their abstract eval and reference lowering, and the public
functions. Importing this package registers every family (``core.families``)."""

import importlib

from ..core.families import FAMILIES

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
