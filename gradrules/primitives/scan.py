"""Primitives of the scan family. Scans: cumsum, cumprod, cummax."""
