"""Samples of the softmax family. softmax and log_softmax (fused: forward, JVP and backward primitives)."""

OPINFOS: list = []
