"""VLLMEngine and library noise goes to the run folder's log, never to the user's terminal.

Once a command's checks have passed, its heavy part runs inside `engine_log(OUT)`: the process's
file descriptors 1 and 2 — where vLLM, torch, transformers and their C/C++ code print start-up
banners, warnings, loading bars and shutdown messages — go through a pipe to OUT/engine.log
(appended; a thread writes it, so a full disk loses that noise, never the run, and a library's
print never fails on it). Our own lines (notes, progress bars) go to `user_stderr()`, the
terminal's stderr kept aside; the command's result and its one-line error are printed after the
phase, on the restored streams. An exception that leaves the phase has its traceback appended
to the log and the log's path set on it (`exc.engine_log`), so the CLI can end with one line that
names the log (real/app/cli.py). `quiet_exit()` sends what the engine prints while the process
ends (its shutdown) to the same log."""

import os
import sys
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path

ENGINE_LOG = "engine.log"
# the open phase's depth and stream for our lines, the latest phase's log, and the terminal's
# stderr kept aside (one stream per process: a progress bar may outlive its phase)
_phase = {"depth": 0, "err": None, "log": None, "terminal": None}


def user_stderr():
    """The stream for our own notes and progress bars: the terminal's stderr, also inside a
    phase (outside one: sys.stderr as it is)."""
    return _phase["err"] if _phase["depth"] else sys.stderr


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _fd_of(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # pytest's capture has none
        return None


def _drain(fd: int, path: Path) -> None:
    """Copy the pipe into the log until every writer has closed it; a write that fails (a full
    disk) drops the rest, the pipe keeps being read so no writer ever blocks."""
    try:
        log = open(path, "ab")  # noqa: SIM115  (closed below, after the loop)
    except OSError:
        log = None
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            if log is not None:
                try:
                    log.write(chunk)
                    log.flush()
                except OSError:
                    log = None
    if log is not None:
        try:
            log.close()
        except OSError:
            pass


@contextmanager
def engine_log(folder):
    """Inside: descriptors 1 and 2 write FOLDER/engine.log (see the module docstring); nested
    phases (a compare's runs, an audit's training) share the outer one's log."""
    if _phase["depth"]:
        _phase["depth"] += 1
        try:
            yield _phase["log"]
        finally:
            _phase["depth"] -= 1
        return
    path = Path(folder) / ENGINE_LOG
    _flush()
    err_fd = _fd_of(sys.stderr)
    # our own lines: a stream on a copy of the terminal's stderr when sys.stderr is that
    # descriptor; a stream without one (a test's capture) is kept as it is
    user = sys.stderr
    if err_fd == 2:
        if _phase["terminal"] is None:
            _phase["terminal"] = os.fdopen(os.dup(2), "w", buffering=1, errors="replace")
        user = _phase["terminal"]
    saved = os.dup(1), os.dup(2)
    r, w = os.pipe()
    reader = threading.Thread(target=_drain, args=(r, path), daemon=True)
    reader.start()
    os.dup2(w, 1)
    os.dup2(w, 2)
    os.close(w)
    _phase.update(depth=1, err=user, log=path)
    failed = None
    try:
        yield path
    except Exception as e:
        failed = e
        raise
    finally:
        _flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        reader.join(timeout=5.0)  # EOF once our copies are closed
        _phase.update(depth=0, err=None)
        if failed is not None:
            _log_failure(failed, path)


def _log_failure(e: Exception, path: Path) -> None:
    """Append the traceback of `e` to the log and name the log on it (when it could be written)."""
    try:
        with open(path, "a") as log:
            log.write("".join(traceback.format_exception(e)))
        e.engine_log = str(path)
    except OSError:
        pass


def quiet_exit() -> None:
    """After a command's last line, in a process that ran a phase: what is printed while the
    process ends (an engine's shutdown) goes to that phase's log (or nowhere), not the terminal."""
    if _phase["log"] is None:
        return
    _flush()
    try:
        fd = os.open(_phase["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
