"""Primitives of the random family. Random ops with zero gradient: dropout, uniform, normal, exponential."""
