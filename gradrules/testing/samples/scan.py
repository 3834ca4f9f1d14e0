"""Samples of the scan family. Scans: cumsum, cumprod, cummax."""

OPINFOS: list = []
