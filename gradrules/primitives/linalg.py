"""Primitives of the linalg family. Linear algebra: matmul, mm, bmm, addmm, linear, einsum, fused_gemm_epilogue."""
