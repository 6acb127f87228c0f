"""Writing result files so that nothing is lost and nothing misleads: the one implementation used
by every writer (sara-sim figures, paper_figs, sara-real's runs, compares, audits, benchmarks).

* `atomic_write`: a temp file beside the target, fsynced, then `os.replace` — a crash or a full
  disk leaves the old complete file or the new complete one, never half of either (the temp file
  is removed on failure, so it neither lingers nor blocks a rerun);
* `append_bytes`: an fsynced append that, when the write fails (ENOSPC...), cuts the file back to
  its old length — a torn tail is left only by a kill mid-write, and readers detect it;
* `writing(path)`: turns any OSError raised while writing `path` into a `WriteError`, whose
  message is one line naming the file and the OS's reason;
* `run_cli`: the one place where every CLI (sara-sim, sara-real, paper_figs) turns a
  ParameterError into one line and exit 2, an OSError into one line and exit 1.

Reading what a user names goes through `check_input` / `read_input`: every path gets its true
reason (missing, a directory, a named pipe or device, a dangling symbolic link, unreadable) under
the flag the user typed; a parser then says "malformed" only of a file it could read.

JSON results go through `dumps_json`: an undefined number (nan, inf) is null, never a stand-in."""

import contextlib
import json
import os
import stat
import sys
from pathlib import Path

_KINDS = {  # what a path that is not a regular file is, in words
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class WriteError(OSError):
    """An OS error while writing a named file (disk full, read-only, permission...)."""

    def __init__(self, path, err: OSError):
        self.path = Path(path)
        reason = err.strerror or str(err) or type(err).__name__
        super().__init__(err.errno, f"cannot write {self.path}: {reason}")

    def __str__(self) -> str:
        return self.strerror


@contextlib.contextmanager
def writing(path):
    """`with writing(path): ...` — an OSError inside becomes a WriteError naming `path`."""
    try:
        yield
    except WriteError:
        raise
    except OSError as e:
        raise WriteError(path, e) from None


def atomic_write(path, data: bytes | str) -> None:
    """Replace `path` with `data` in one step (see the module docstring)."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode()
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:  # a full disk or an interrupt: no stale temp file stays
            tmp.unlink(missing_ok=True)
            raise


def atomic_save(path, save) -> None:
    """`save(tmp_path)` writes the file (a figure, a CSV); it then replaces `path` atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")  # keeps the suffix: savefig reads it
    with writing(path):
        try:
            save(tmp)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def append_bytes(path, data: bytes) -> None:
    """Append `data` and fsync; a failed write is cut back off (see the module docstring)."""
    path = Path(path)
    with writing(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:  # os.write may write part of the buffer
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # shrinking needs no space: the old file comes back
                raise
        finally:
            os.close(fd)


def path_problem(path, what: str = "file", folder: bool = False) -> str | None:
    """Why `path` is not a readable `what` (a regular file; with `folder`, a directory), or None:
    missing, a dangling symbolic link, a directory / not one, a named pipe, device or socket,
    unreadable. Opens nothing that could block (a FIFO is named, never opened)."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode  # follows symbolic links
    except FileNotFoundError:
        if os.path.islink(p):
            return f"{p} is a dangling symbolic link (to {os.readlink(p)}, which does not exist)"
        return f"no such {what}: {p}"
    except NotADirectoryError:
        part = next((q for q in reversed(p.parents) if q.exists() and not q.is_dir()), p.parent)
        return f"no such {what}: {p} ({part} is a file, not a directory)"
    except OSError as e:  # a directory on the way that cannot be searched, a link loop
        return f"cannot reach {p}: {e.strerror or e}"
    link = f" (via a symbolic link to {os.path.realpath(p)})" if os.path.islink(p) else ""
    kind = _KINDS.get(stat.S_IFMT(mode), "a file")
    if stat.S_ISDIR(mode) != folder:
        return f"{p} is {'a directory' if stat.S_ISDIR(mode) else kind}{link}, not a {what}"
    if not folder and not stat.S_ISREG(mode):
        return f"{p} is {kind}{link}, not a regular file ({what})"
    try:
        if folder:
            os.listdir(p)
        else:  # open and read a byte: a permission or an I/O error shows here
            fd = os.open(p, os.O_RDONLY)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
    except OSError as e:
        return f"cannot read {p}: {e.strerror or e}"
    return None


def check_input(path, flag: str, what: str = "file", folder: bool = False) -> Path:
    """`path` as a Path, or a ParameterError under `flag` with `path_problem`'s reason."""
    problem = path_problem(path, what, folder)
    if problem is not None:
        from sara_sim.core.errors import ParameterError

        raise ParameterError(flag, problem)
    return Path(path)


def read_input(path, flag: str, what: str = "file") -> bytes:
    """The bytes of a file a user named: `check_input`'s reasons, and a read that fails after
    the open (an I/O error) is "cannot read", never "malformed"."""
    p = check_input(path, flag, what)
    try:
        return p.read_bytes()
    except OSError as e:
        from sara_sim.core.errors import ParameterError

        raise ParameterError(flag, f"cannot read {p}: {e.strerror or e}") from None


def one_line(text: str) -> str:
    """`text` on one line: a library's multi-line or newline-ended message joined by spaces."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def os_error_line(e: OSError) -> str:
    """One line for an OS error: the file it names (if any) and the OS's reason."""
    if isinstance(e, WriteError):
        return str(e)
    reason = e.strerror or str(e) or type(e).__name__
    if e.filename is not None:
        return f"{e.filename}: {reason}"
    return reason


def run_cli(prog: str, call, usage=(), failures=(), hint: str = "") -> int:
    """`call()`'s exit status (None -> 0), or one line `PROG: error: ...` on stderr: exit 2 for a
    ParameterError (bad input, said before anything started) or an exception in `usage`, exit 1
    for an OSError (the file and the OS's reason; a full disk...), a MemoryError (a request run
    with --force past what this machine holds) or one in `failures`, followed by `hint` (what to
    do next). A message is always one line (`one_line`). Nothing else is caught: a bug keeps its
    traceback."""
    from sara_sim.core.errors import ParameterError

    try:
        return call() or 0
    except BrokenPipeError:
        # The reader went away (`| head`): not an error of ours. Point stdout at /dev/null so the
        # interpreter's final flush cannot fail again, and exit as a program killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (ParameterError, *usage) as e:
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"{prog}: error: out of memory ({one_line(e) or 'MemoryError'})", file=sys.stderr)
        return 1
    except (OSError, *failures) as e:
        text = os_error_line(e) if isinstance(e, OSError) else str(e)
        print(f"{prog}: error: {one_line(text)}{hint}", file=sys.stderr)
        return 1


def dumps_json(obj, indent=1) -> str:
    """JSON text with every undefined number (nan, inf) as null (JSON has no nan)."""
    from sara_sim.core.errors import finite_or_none

    return json.dumps(finite_or_none(obj), indent=indent, allow_nan=False)
