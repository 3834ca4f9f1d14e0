"""Primitives of the attention family. Attention (fused: forward, JVP and backward primitives)."""
