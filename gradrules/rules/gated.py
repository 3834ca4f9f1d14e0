"""Rules of the gated family. Gated MLP activations: silu_gated, silu_rowsplit, gelu_gated."""
