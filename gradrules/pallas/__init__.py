"""Pallas kernels (forward, backward, JVP) for the hot fused ops."""
