"""The bearer token of `lackjail serve --http`: a secret in a 0600 file of the user's own.

Every HTTP request to the MCP server must carry `Authorization: Bearer
<token>`; without it any local account (or a page the browser was tricked
into loading) could drive a server that may run as root. The token lives in
`$XDG_STATE_HOME/lackjail/mcp-token` (`~/.local/state/lackjail/mcp-token`):
made by `serve --http` or `mcp-config --http` when it is missing (O_EXCL,
O_NOFOLLOW, mode 0600, in a 0700 folder) and reused after, so a client's
config stays valid across restarts. A token file that is not a regular file
of ours, or that others may read, is refused, never used.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat

TOKEN_NAME = "mcp-token"
TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 256


class TokenError(OSError):
    """The token file cannot be made or used; the message names it and the fix."""


def token_folder() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "lackjail")


def token_path() -> str:
    return os.path.join(token_folder(), TOKEN_NAME)


def load_or_create() -> str:
    """The server's token: read from the token file, made first when there is none."""
    folder = token_folder()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise TokenError(f"cannot use the folder {folder}: {exc.strerror or exc}") from None
    try:
        return _read(dirfd) or _create(dirfd)
    finally:
        os.close(dirfd)


def _read(dirfd: int) -> str | None:
    path = token_path()
    try:
        fd = os.open(TOKEN_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dirfd)  # fmt: skip
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TokenError(f"cannot read {path}: {exc.strerror or exc} (remove it)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise TokenError(f"{path} is not a regular file of yours; remove it")
        if info.st_mode & 0o077:
            raise TokenError(f"{path} may be read by others (mode {info.st_mode & 0o777:o}); "
                             "remove it and a new token is made")  # fmt: skip
        token = os.read(fd, MAX_TOKEN_CHARS + 1).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not 16 <= len(token) <= MAX_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise TokenError(f"{path} does not hold a token; remove it and a new one is made")
    return token


def _create(dirfd: int) -> str:
    """A new token, written whole to a temp file and linked into place (never half-written;
    when another serve linked one first, that one is used)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    tmp = f".{TOKEN_NAME}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600, dir_fd=dirfd)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, (token + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, TOKEN_NAME, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
    except FileExistsError:
        return _read(dirfd) or token
    except OSError as exc:
        raise TokenError(f"cannot make {token_path()}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dirfd)
    return token
