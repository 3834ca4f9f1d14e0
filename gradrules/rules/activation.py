"""Rules of the activation family. Activations: sigmoid, log_sigmoid, relu, leaky_relu, hardtanh, hardswish, silu, gelu, softplus, clamp."""
