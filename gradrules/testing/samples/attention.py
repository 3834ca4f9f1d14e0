"""Samples of the attention family. Attention (fused: forward, JVP and backward primitives)."""

OPINFOS: list = []
