"""Running the `bongard` command as a user does, never a traceback: in this process by default
(Click's runner, with the environment and working folder given), or as a real process where
the process itself is the point (`run_bongard_process`: kills, start-up, exit codes of the script)."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from typer.testing import CliRunner

from graphs.cli import main

BONGARD = Path(sys.executable).with_name("bongard")


@contextlib.contextmanager
def _working_folder(cwd: Path | None) -> Iterator[None]:
    before = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def run_bongard(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`bongard ARGS` through its real entry point (`graphs.cli.main`), in this process."""
    argv = [str(BONGARD), *map(str, args)]
    runner = CliRunner()
    with runner.isolation(env=env) as (out, err, _), _working_folder(cwd):
        saved_argv, sys.argv = sys.argv, argv
        try:
            main()
            code = 0
        except SystemExit as leaving:
            code = leaving.code if isinstance(leaving.code, int) else (0 if leaving.code is None else 1)
        finally:
            sys.argv = saved_argv
            gc.unfreeze()  # main() leaves its heap to a process exit; this process goes on
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    assert "Traceback" not in stderr, stderr
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def run_bongard_process(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`bongard ARGS` as a separate process, as a shell runs it."""
    result = subprocess.run(
        [str(BONGARD), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def run_on_classic(
    problems: str, data: Path, home: Path, *flags: str | Path
) -> subprocess.CompletedProcess[str]:
    """`bongard run FLAGS` over classic problems, panels 5 and 11 held out as the test pair (the case
    study's), in workspace `home`: `flags` name the strategy, the models and any options."""
    args = ("--dataset", "bongard-classic", "--problems", problems, "-O", "holdout_test=true")
    return run_bongard("run", *flags, *args, "--data-dir", data, "--home", home)
