"""Samples of the pool family. Pooling: avg_pool2d, max_pool2d, adaptive_avg_pool2d."""

OPINFOS: list = []
