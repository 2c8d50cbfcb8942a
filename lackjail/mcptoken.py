"""The bearer token of `lackjail serve --http`: a secret in a 0600 file of the user's own.

Every HTTP request to the MCP server must carry `Authorization: Bearer
<token>`; without it any local account (or a page the browser was tricked
into loading) could drive a server that may run as root. The token lives in
`$XDG_STATE_HOME/lackjail/mcp/token` (`~/.local/state/lackjail/mcp/token`),
in a folder only this user may enter: made by `serve --http` or `mcp-config
--http` when it is missing (written whole to a temp file made O_EXCL and
O_NOFOLLOW, mode 0600, then linked into place) and reused after, so a
client's config stays valid across restarts. A token file that is not a
regular file of ours, or that others may read, is refused, never used.
"""

from __future__ import annotations

import os
import secrets

from lackjail.errors import HostError
from lackjail.workspace.commit import private_dir
from lackjail.workspace.hostfs import explain, open_regular_at, read_fd, write_whole

TOKEN_NAME = "token"
TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 256


class TokenError(HostError, OSError):
    """The token file cannot be made or used; the message names it and the fix."""


def token_folder() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "lackjail", "mcp")


def token_path() -> str:
    return os.path.join(token_folder(), TOKEN_NAME)


def load_or_create() -> str:
    """The server's token: read from the token file, made first when there is none."""
    try:
        folder = private_dir(token_folder())
    except OSError as exc:
        raise TokenError(f"cannot use the folder {token_folder()}: {explain(exc)}") from None
    try:
        token = _read(folder.fd)
        if token is None:
            token = secrets.token_urlsafe(TOKEN_BYTES)
            try:
                write_whole(folder, TOKEN_NAME, (token + "\n").encode("ascii"), False, 0o600)
            except FileExistsError:  # another serve made one meanwhile: use that one
                token = _read(folder.fd) or token
            except OSError as exc:
                raise TokenError(f"cannot make {token_path()}: {explain(exc)}") from None
        return token
    finally:
        folder.close()


def _read(dirfd: int) -> str | None:
    path = token_path()
    try:
        fd = open_regular_at(dirfd, TOKEN_NAME)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TokenError(f"cannot read {path}: {explain(exc)} (remove it)") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise TokenError(f"{path} is not a file of yours; remove it")
        if info.st_mode & 0o077:
            raise TokenError(f"{path} may be read by others (mode {info.st_mode & 0o777:o}); "
                             "remove it and a new token is made")  # fmt: skip
        raw = read_fd(fd, MAX_TOKEN_CHARS + 1)
    except OSError as exc:
        if isinstance(exc, TokenError):
            raise
        raise TokenError(f"cannot read {path}: {explain(exc)} (remove it)") from None
    finally:
        os.close(fd)
    token = raw.decode("ascii", "replace").strip()
    if not 16 <= len(token) <= MAX_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise TokenError(f"{path} does not hold a token; remove it and a new one is made")
    return token
