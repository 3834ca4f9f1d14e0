"""JVP, transpose and batching rules, one module per family. Importing this
package registers them all (``core.families``)."""

import importlib

from ..core.families import FAMILIES

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
