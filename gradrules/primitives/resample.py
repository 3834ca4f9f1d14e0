"""Primitives of the resample family. Resampling: upsample2d, pixel_shuffle, pixel_unshuffle, unpatchify, grid_sample2d."""
