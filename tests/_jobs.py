"""Scripts the test run starts in the background when it begins, so that no
xdist worker sits idle waiting for one: the 8-device sharding script
(``_sharded.py``), split into jobs that run side by side.

The first pytest process (the xdist controller, or pytest itself without
xdist) calls ``start`` from ``conftest.pytest_configure`` when the run
includes ``test_sharding.py``; each job writes its stdout, stderr and exit
status into a folder named by ``$GRADRULES_TEST_JOBS``, which the workers
inherit. ``result`` waits for a job's status (or runs the job itself when
nothing started it: a run that did not name the file, e.g. ``--pyargs``).
``stop`` ends the jobs still running and removes the folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import shutil
import tempfile
import threading
import time
from pathlib import Path

ENV = "GRADRULES_TEST_JOBS"
SHARDED = Path(__file__).with_name("_sharded.py")
JOBS = ("kernels", "walk-0", "walk-1")
"""The jobs of ``_sharded.py`` (its argument): the kernel cases, and each
half of the table walk."""
TIMEOUT = 900

_running: list[subprocess.Popen] = []


def _argv(job: str) -> list[str]:
    return [sys.executable, str(SHARDED), job]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(SHARDED.parents[1]))


def runs_sharding(args: list[str], rootdir: Path) -> bool:
    """Whether the command-line paths (none: the tests folder) cover
    ``test_sharding.py``."""
    test = SHARDED.with_name("test_sharding.py").resolve()
    paths = [Path(a.split("::")[0]) for a in args if not a.startswith("-")] or [SHARDED.parent]
    return any(test == p.resolve() or p.resolve() in test.parents
               for p in (p if p.is_absolute() else rootdir / p for p in paths))


def _wait(proc: subprocess.Popen, stem: Path, streams: tuple) -> None:
    code = proc.wait()
    for stream in streams:
        stream.close()
    try:
        stem.with_suffix(".tmp").write_text(str(code))
        stem.with_suffix(".tmp").rename(stem.with_suffix(".rc"))
    except FileNotFoundError:   # ``stop`` killed the job and removed the folder
        pass


def start() -> None:
    folder = Path(tempfile.mkdtemp(prefix="gradrules-test-jobs-"))
    os.environ[ENV] = str(folder)
    for job in JOBS:
        stem = folder / job
        streams = open(f"{stem}.out", "w"), open(f"{stem}.err", "w")
        proc = subprocess.Popen(_argv(job), env=_env(), stdout=streams[0], stderr=streams[1])
        _running.append(proc)
        threading.Thread(target=_wait, args=(proc, stem, streams), daemon=True).start()


def result(job: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a job, once it has ended."""
    folder = os.environ.get(ENV)
    if not folder or not (Path(folder) / f"{job}.out").exists():
        done = subprocess.run(_argv(job), capture_output=True, text=True, env=_env(),
                              timeout=TIMEOUT)
        return done.returncode, done.stdout, done.stderr
    stem = Path(folder) / job
    deadline = time.monotonic() + TIMEOUT
    while not stem.with_suffix(".rc").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{SHARDED.name} {job} did not end within {TIMEOUT} s")
        time.sleep(0.5)
    return (int(stem.with_suffix(".rc").read_text()), Path(f"{stem}.out").read_text(),
            Path(f"{stem}.err").read_text())


def stop() -> None:
    for proc in _running:
        if proc.poll() is None:
            proc.kill()
    folder = os.environ.pop(ENV, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
