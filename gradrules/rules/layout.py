"""Rules of the layout family. Layout: slice, row_slice, select, dynamic_slice, dynamic_update_slice, concatenate, split, pad, tile, repeat, flip, tensor_unfold."""
