"""Opening a host folder by descriptor, one component at a time from `/`, no symlink of
another user followed (`open_host_dir`), and a name beneath a folder descriptor (`open_at`).
The standard library only, no ctypes: the `lackjail run` client opens its server's folder
with it before it imports anything else."""

from __future__ import annotations

import errno
import os
import stat

MAX_LINKS = 40  # symlinks followed while resolving one path, as the kernel's own limit
DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def open_at(dirfd: int, name: str, flags: int, mode: int = 0o600) -> int:
    """os.open of NAME in the folder DIRFD, never through a symlink (ELOOP if NAME is one)."""
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)


def _trusted_link(info: os.stat_result) -> bool:
    """A symlink only root or we could have made: a user cannot make it name something else."""
    return info.st_uid in (0, os.geteuid())


def open_host_dir(path: str, last_link: bool = False, folder: bool = True) -> tuple[int, str]:
    """(O_PATH descriptor, real path) of the host folder PATH, walked from `/` one component at
    a time, each opened O_NOFOLLOW beneath the one before. A symlink on the way is followed only
    when root or we own it (a user's link could name /etc); the last component may be one only
    with LAST_LINK. What the descriptor holds is what the walk reached, whatever is renamed or
    swapped afterwards; a folder unless FOLDER is false. OSError: ELOOP names the symlink
    refused."""
    if "\x00" in path:
        raise OSError(errno.EINVAL, "the path holds a NUL byte")
    todo = [p for p in reversed(os.path.abspath(path).split("/")) if p not in ("", ".")]
    stack, names, links = [os.open("/", DIR_FLAGS)], [], 0
    try:
        while todo:
            part = todo.pop()
            if part == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                    names.pop()
                continue
            fd = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=stack[-1])
            info = os.fstat(fd)
            if stat.S_ISLNK(info.st_mode):
                try:
                    shown = "/" + "/".join([*names, part])
                    if not todo and not last_link:
                        raise OSError(errno.ELOOP, f"{shown} is a symlink; pass the real folder")
                    if not _trusted_link(info):
                        raise OSError(
                            errno.ELOOP,
                            f"{shown} is a symlink another user owns (uid {info.st_uid}); "
                            "pass the real path",
                        )
                    links += 1
                    if links > MAX_LINKS:
                        raise OSError(errno.ELOOP, f"{shown}: too many symlinks")
                    target = os.readlink("", dir_fd=fd)  # the link this descriptor holds
                finally:
                    os.close(fd)
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                    names = []
                todo.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
                continue
            stack.append(fd)
            names.append(part)
            if not stat.S_ISDIR(info.st_mode) and (todo or folder):
                raise OSError(errno.ENOTDIR, f"/{'/'.join(names)} is not a folder")
        result = stack.pop()
        return result, "/" + "/".join(names)
    finally:
        for fd in stack:
            os.close(fd)
