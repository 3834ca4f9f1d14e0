"""Primitives of the sort family. Sorting and selection: sort, argsort, topk, argmax, argmin."""
