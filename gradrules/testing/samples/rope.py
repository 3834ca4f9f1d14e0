"""Samples of the rope family. Rotary position embedding (fused)."""

OPINFOS: list = []
