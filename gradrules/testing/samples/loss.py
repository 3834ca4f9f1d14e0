"""Samples of the loss family. Losses: cross_entropy, nll_loss, fused_linear_cross_entropy."""

OPINFOS: list = []
