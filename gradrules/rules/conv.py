"""Rules of the conv family. Convolution: conv2d, conv_transpose2d."""
