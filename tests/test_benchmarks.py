"""benchmarks/gpu_attention.py on this machine (no GPU): its dry run lowers
every gradrules attention program for CUDA with the Triton kernels, and its
measuring and table code runs end to end on the CPU at a tiny size."""

import importlib.util
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import pytest

from gradrules.bench import format_columns, interleaved_samples, time_interleaved

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_attention.py"
DRY_ARGS = ["--dry-run", "--seq", "1024", "--head-dim", "64", "--memory-seq", "2048"]
# per causal: fwd, grad, jvp in bfloat16 and in float32, and the memory row's grad
DRY_ROWS = 2 * (3 + 3 + 1)


def _load(path: Path):
    """The benchmark script at ``path`` as a module, for the test module's life."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def bench():
    yield from _load(SCRIPT)


# the Triton kernels of each program: forward; forward, delta, dk/dv, dq; forward, jvp
KERNEL_CALLS = {"fwd": 1, "grad": 4, "jvp": 2}


def _dry_rows(out):
    """(program, triton calls, status) of each row of the dry run's table."""
    rows = []
    for line in out.splitlines():
        cells = line.split(maxsplit=7)
        if len(cells) == 8 and cells[0].isdigit():
            rows.append((cells[5], cells[6], cells[7]))
    return rows


def test_dry_run_lowers_every_program_with_its_triton_kernels(bench, capsys):
    """Forced onto the kernels, every program lowers for CUDA and holds the
    Triton calls of its kernels."""
    rc = bench.main([*DRY_ARGS, "--kernel", "pallas"])
    out = capsys.readouterr().out
    rows = _dry_rows(out)
    assert len(rows) == DRY_ROWS, out
    assert [r for r in rows if r[2] != "lowered"] == [], out
    assert all(int(calls) == KERNEL_CALLS[name] for name, calls, _ in rows), out
    assert rc == 0, out


def test_a_failed_lowering_is_a_row_and_a_nonzero_exit(bench, capsys):
    """head_dim 0 has no default scale: every program fails, each in its row."""
    rc = bench.main(["--dry-run", "--seq", "64", "--head-dim", "0", "--causal", "no",
                     "--memory-seq", "0", "--kernel", "xla"])
    out = capsys.readouterr().out
    rows = _dry_rows(out)
    assert len(rows) == 6 and all(r[2].startswith("FAILED ValueError") for r in rows), out
    assert "6 lowerings, 6 failed" in out and rc == 1


def test_full_run_on_the_cpu_at_a_tiny_size(bench, capsys):
    """Check, interleaved timing, memory and the table, on gradrules' XLA path:
    a reference that cannot run here (cuDNN) is an error in the row, not the end."""
    rc = bench.main(["--seq", "64", "--head-dim", "16", "--causal", "yes", "--tokens", "128",
                     "--heads", "2", "--memory-seq", "128", "--no-float32-check",
                     "--repeats", "2", "--kernel", "xla"])
    out = capsys.readouterr().out
    table = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [(r[0], r[5]) for r in table] == [
        ("64", "fwd"), ("64", "bwd"), ("64", "jvp"), ("128", "bwd")], out
    timed = table[:3]
    assert all(r[6] == "ok" and float(r[7]) == 0.0 for r in timed), out
    fwd, _, jvp = timed        # (bwd is a difference of times: noise may make it <= 0 here)
    assert all(float(r[8]) > 0 and r[11] == "-" and float(r[12]) > 0 for r in (fwd, jvp)), out
    assert "cudnn: " in out and "gradrules: " not in out, out
    assert "kernels match the XLA path" in out and rc == 1, out   # no peak on a CPU


def test_rows_count_bwd_as_grad_minus_fwd(bench):
    cfg = bench.Config(seq=1024, batch=16, head_dim=128, causal=False)
    m = bench.Measured(times={("gradrules", "fwd"): 1e-3, ("gradrules", "grad"): 3e-3,
                              ("gradrules", "jvp"): 2e-3, ("jax-xla", "fwd"): 2e-3,
                              ("jax-xla", "grad"): 8e-3},
                       temps={("gradrules", "grad"): 2**20, ("cudnn", "grad"): 2**21},
                       checks={"fwd": 1e-3, "grad": 0.5})
    fwd, bwd, jvp = bench.rows(cfg, m, peak=1000.0)
    flops = 4.0 * 16 * 16 * 1024 * 1024 * 128
    assert fwd[6:13] == ["ok 1.0e-03", "1.000", f"{flops / 1e-3 / 1e12:.0f}",
                         f"{100 * flops / 1e-3 / 1e12 / 1000:.0f}%", "-", "0.50", "-"]
    assert bwd[6:8] == ["BAD 5.0e-01", "2.000"] and bwd[11] == "0.33"   # 2 ms / 6 ms
    assert bwd[8] == f"{2.5 * flops / 2e-3 / 1e12:.0f}" and bwd[13:15] == ["1.0", "0.50"]
    assert jvp[6] == "-" and jvp[11] == "-"


def test_time_interleaved_and_format_columns():
    calls = {"a": lambda: jnp.ones(4), "b": lambda: jnp.zeros(4)}
    times = time_interleaved(calls, repeats=3)
    assert set(times) == {"a", "b"} and all(t > 0 for t in times.values())
    assert format_columns(("x", "long"), [("1", "2")]).splitlines() == [
        "x  long", "-  ----", "1  2"]


def test_interleaved_samples_take_the_same_number_of_calls_from_each():
    """A sample's final wait is spread over its calls, so both sides of a
    ratio are sampled with the same number of calls: here a call of about
    1 ms and one of microseconds, 4 repeats (after a warm-up call and three
    timed ones each), several calls a sample."""
    counts = {"fast": 0, "slow": 0}

    def fast():
        counts["fast"] += 1
        return jnp.zeros(())

    def slow():
        counts["slow"] += 1
        time.sleep(1e-3)
        return jnp.zeros(())

    samples = interleaved_samples({"fast": fast, "slow": slow}, repeats=4, min_sample_s=0.02)
    assert counts["fast"] == counts["slow"] >= 4 + 4 * 2
    assert len(samples["fast"]) == len(samples["slow"]) == 4
    assert min(samples["slow"]) > 1e-3 > max(samples["fast"])


# ------------------------------------------------------ gpu_memory_bound.py
MEMORY_BOUND = SCRIPT.with_name("gpu_memory_bound.py")


@pytest.fixture(scope="module")
def memory_bound():
    yield from _load(MEMORY_BOUND)


def _memory_bound_rows(out: str, names: set[str]) -> list[list[str]]:
    """The table rows of ``out`` (those that start with an op's name)."""
    return [line.split(None, 4) for line in out.splitlines()
            if line.split()[:1] and line.split()[0] in names]


def test_memory_bound_dry_run_lowers_every_op_with_kernels(memory_bound, capsys):
    """Every program of an op with Pallas kernels lowers for CUDA with Triton
    calls; an op without kernels says so (and the run still exits 0)."""
    ops = {o.name: o for o in memory_bound.ops()}
    rc = memory_bound.main(["--dry-run", "--dtype", "bfloat16"])
    out = capsys.readouterr().out
    rows = _memory_bound_rows(out, set(ops))
    assert len(rows) == 2 * len(ops), out
    for name, dtype, mode, calls, status in rows:
        op = ops[name]
        if memory_bound.has_kernels(op.op):
            assert status == "lowered" and int(calls) >= 1, (name, mode, out)
        else:
            assert status == "no kernel yet", out
    assert rc == 0, out


def test_memory_bound_runs_end_to_end_on_the_cpu(memory_bound, capsys):
    """Tiny sizes on the CPU (kernel "xla"): every row measured, none failed."""
    memory_bound.main(["--kernel", "xla", "--shrink", "64", "--repeats", "1", "--dtype",
                       "float32", "--ops", "rms_norm", "cross_entropy_32k"])
    out = capsys.readouterr().out
    rows = _memory_bound_rows(out, {"rms_norm", "cross_entropy_32k"})
    assert [(r[0], r[2]) for r in rows] == [("rms_norm", "fwd"), ("rms_norm", "fwd+bwd"),
                                            ("cross_entropy_32k", "fwd"),
                                            ("cross_entropy_32k", "fwd+bwd")], out
    assert "FAILED" not in out and "missed:" in out, out
