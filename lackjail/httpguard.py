"""The door of `lackjail serve --http`: every request must name the bound address and carry the
server's bearer token.

An ASGI wrapper in front of the MCP app. Host must be the address the server
is bound to (`localhost` too for a loopback bind), and Origin, when a
browser sends one, the same address over http: a DNS-rebinding page names
its own host and is refused (421, 403), whatever address was bound (the
SDK checks only 127.0.0.1, localhost and ::1). Then `Authorization: Bearer
<token>` must match (compared in constant time), else 401: no other local
account can drive the server. Only http and lifespan scopes pass.
"""

from __future__ import annotations

import hmac
import ipaddress

LOOPBACK_NAMES = ("localhost",)


def host_forms(host: str, port: int) -> list[str]:
    """The Host header values that name HOST:PORT (an IPv6 address in brackets); a loopback
    address may also be reached as localhost."""
    names = [host]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # "localhost"
        address = None
    if host in LOOPBACK_NAMES:
        names += ["127.0.0.1", "::1"]
    elif address is not None and address.is_loopback:
        names += list(LOOPBACK_NAMES)
    forms = []
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        forms.append(f"{shown}:{port}".lower())
    return forms


class Guard:
    """ASGI app: APP behind the Host, Origin and bearer-token checks (see the module docstring)."""

    def __init__(self, app, token: str, host: str, port: int):
        self.app = app
        self.hosts = frozenset(host_forms(host, port))
        self.origins = frozenset(f"http://{form}" for form in self.hosts)
        self.expected = f"Bearer {token}".encode("ascii")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return None
        headers = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name.lower(), value)
        host = headers.get(b"host", b"").decode("latin-1").lower()
        origin = headers.get(b"origin")
        if host not in self.hosts:
            return await _refuse(send, 421, "the Host header does not name this server")
        if origin is not None and origin.decode("latin-1").lower() not in self.origins:
            return await _refuse(send, 403, "the Origin header is not this server")
        if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
            return await _refuse(
                send, 401, "a bearer token is needed (lackjail mcp-config --http prints it)",
                [(b"www-authenticate", b'Bearer realm="lackjail"')],
            )  # fmt: skip
        return await self.app(scope, receive, send)


async def _refuse(send, status: int, why: str, extra=()) -> None:
    body = (why + "\n").encode("ascii")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
