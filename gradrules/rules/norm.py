"""Rules of the norm family. Normalisation: layer_norm, rms_norm, group_norm, batch_norm."""
