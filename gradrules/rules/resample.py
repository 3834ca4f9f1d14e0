"""Rules of the resample family.

Every primitive here acts on trailing image axes with any leading axes, so
``front_batch`` moves the batch axis in front and binds once. upsample2d, a separable map
``A x B^T``, transposes to its transpose primitive ``A^T ct B`` and back
(``pool.separable_rules``); pixel_shuffle and pixel_unshuffle, unpatchify
and patchify are each other's transposes.
"""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..primitives.resample import (patchify_p, pixel_shuffle_p, pixel_unshuffle_p,
                                   unpatchify_p, upsample2d_p, upsample2d_transpose_p)
from ._common import linear_map_rules
from ._fused import transpose_to
from .pool import separable_rules, separable_transpose_rules

# upsample2d ------------------------------------------------------------------
register_rules(upsample2d_p, linear=("x",), **separable_rules(upsample2d_p))
register_rules(upsample2d_transpose_p, linear=("ct",), **separable_transpose_rules(upsample2d_p))


# permutations: pixel_shuffle / pixel_unshuffle, unpatchify / patchify ----------
# The transpose of a permutation is its inverse permutation.
register_rules(pixel_shuffle_p, linear=("x",),
               **linear_map_rules(pixel_shuffle_p,
                                  partial(transpose_to, pixel_shuffle_p, pixel_unshuffle_p)))
register_rules(pixel_unshuffle_p, linear=("x",),
               **linear_map_rules(pixel_unshuffle_p,
                                  partial(transpose_to, pixel_unshuffle_p, pixel_shuffle_p)))
register_rules(unpatchify_p, linear=("tokens",),
               **linear_map_rules(unpatchify_p, partial(transpose_to, unpatchify_p, patchify_p)))
register_rules(patchify_p, linear=("x",),
               **linear_map_rules(patchify_p, partial(transpose_to, patchify_p, unpatchify_p)))
