"""The ``gradrules`` command as installed (the console script beside this
Python): flags reach the demo (its training run through this command is in
test_demo.py), and every bad command line gets one line on stderr and exit
status 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradrules.cli import main as cli_main

GRADRULES = Path(sys.executable).with_name("gradrules")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    assert GRADRULES.exists(), f"the console script is not installed at {GRADRULES}"
    return subprocess.run([str(GRADRULES), *args], capture_output=True, text=True,
                          timeout=600)


def test_demo_help_lists_its_flags():
    done = _cli("demo", "-h")
    assert done.returncode == 0 and "--d-model" in done.stdout and "--kv-heads" in done.stdout


def test_a_bad_flag_through_the_entry_point():
    done = _cli("check", "softmax", "--chekcs", "fd")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("gradrules: unrecognized arguments: --chekcs fd (`gradrules -h` for "
                           "help)\n"), done.stderr


@pytest.mark.parametrize("argv, says", [
    (["list", "softmx"], "no op or family named 'softmx'; did you mean softmax"),
    (["check", "softmx"], "no op or family named 'softmx'; did you mean softmax"),
    (["check", "softmax", "--checks", "fdd"], "unknown checks ['fdd']"),
    (["list", "--bogus"], "unrecognized arguments: --bogus"),
    (["--verbose", "check"], "unrecognized arguments"),
    ([], "the following arguments are required: cmd"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["demo", "--steps", "0"], "--steps must be >= 1"),
    (["demo", "--d-model"], "argument --d-model: expected one argument"),
])
def test_a_bad_command_line_gets_one_line_and_status_2(argv, says, capsys):
    try:
        status = cli_main(argv)
    except SystemExit as done:
        status = done.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert status == 2 and captured.out == ""
    assert "\n" not in err and "Traceback" not in err and says in err, err
