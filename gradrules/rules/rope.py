"""Rules of the rope family. Rotary position embedding (fused)."""
