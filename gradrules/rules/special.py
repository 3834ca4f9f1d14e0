"""Rules of the special family. Special functions: erf, erfc, erfinv, lgamma, digamma, polygamma, bessel_i0e, bessel_i1e, zeta."""
