"""Test-run settings, made before JAX starts.

The suite compiles thousands of tiny XLA programs (eager primitives and
their derivatives on the sample table's small arrays), and compiling them
costs far more than running them, so the run:

- shares one XLA compilation cache among the xdist workers and the
  subprocesses they start (notebook kernels, the demo, the 8-device
  script), through JAX's ``JAX_COMPILATION_CACHE_DIR``: a program compiled
  by one is loaded by the others. The folder is new for each test run
  and removed at its end, so no run reuses an earlier one's programs;
- compiles without LLVM's optimisation passes
  (``--xla_backend_optimization_level=0``): the same HLO, the same
  numerics, less time in the backend.
"""

from __future__ import annotations

import os
import shutil
import tempfile

# made by the first process to load this file (pytest itself, which starts
# the xdist workers with its environment), removed by it at the end
_OWN_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _OWN_CACHE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="gradrules-tests-xla-")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(
        [os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()

import jax  # noqa: E402  (after the environment above)

jax.config.update("jax_enable_x64", True)


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE:
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
