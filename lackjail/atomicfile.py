"""Writing a file whole or not at all: readers see the old file or the new one."""

import os
import tempfile


def write_text_atomic(path, text: str, replace: bool = True, mode: int = 0o644) -> None:
    """Write TEXT to PATH through a temporary file in the same folder.

    With REPLACE false an existing PATH is never overwritten (FileExistsError),
    without a check-then-write race. OSError on failure; no temporary file is left.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lackjail-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
