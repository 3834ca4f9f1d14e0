"""Rules of the logical family. Predicates, logical and bitwise ops: isfinite, isnan, isinf, logical_not/and/or/xor, bitwise_not/and/or/xor."""
