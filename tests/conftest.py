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
  numerics, less time in the backend; and, where the XLA of the installed
  jaxlib still has them (before 0.11), with its CPU backend's elemental
  emitters instead of the MLIR fusion emitters
  (``--xla_cpu_use_fusion_emitters=false``): a third less compile time in
  the longest run (the JAX 0.11 run compiles with the fusion emitters);
- starts the 8-device sharding script's jobs in the background at its
  beginning when it includes test_sharding.py (``_jobs.py``).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from jaxlib import version as jaxlib_version   # its version only: XLA not started

# made by the first process to load this file (pytest itself, which starts
# the xdist workers with its environment), removed by it at the end
_OWN_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _OWN_CACHE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="gradrules-tests-xla-")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
_FAST_COMPILE = ["--xla_backend_optimization_level=0"]
if jaxlib_version.__version_info__ < (0, 11):      # the flag left XLA with 0.11
    _FAST_COMPILE.append("--xla_cpu_use_fusion_emitters=false")
for _flag in _FAST_COMPILE:
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), _flag]).strip()

import jax  # noqa: E402  (after the environment above)

import _jobs  # noqa: E402

jax.config.update("jax_enable_x64", True)


def pytest_configure(config):
    # the 8-device sharding script's jobs, started before the xdist workers
    # (who inherit $GRADRULES_TEST_JOBS) by the first pytest process only
    if not hasattr(config, "workerinput") and _jobs.runs_sharding(config.args, config.rootpath):
        _jobs.start()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        _jobs.stop()


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE:
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


# Hypothesis profiles of tests/test_fuzz.py (``--hypothesis-profile=NAME``,
# hypothesis's own pytest option): ``ci``, the default, a fixed example per
# op (derandomized: every run draws the same) within the suite's time
# budget; ``long`` for release checks, 10,000 examples per op.
from hypothesis import HealthCheck, settings  # noqa: E402

_FUZZ = dict(deadline=None, database=None, print_blob=True,
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=1, derandomize=True, **_FUZZ)
settings.register_profile("long", max_examples=10_000, **_FUZZ)
settings.load_profile("ci")
