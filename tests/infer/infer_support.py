"""Test support: a scripted loopback LLM server and a config writer.

The server speaks Ollama's /api/chat, Anthropic's /v1/messages and OpenAI's
/v1/chat/completions. Each test
queues the replies it wants per API; every request is recorded so a test can
check what the real client libraries sent (e.g. the validator's errors in the
feedback turn).
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROUTES = {"/api/chat": "ollama", "/v1/messages": "anthropic", "/v1/chat/completions": "openai"}


def ollama_text(text, model="test-model"):
    return 200, {
        "model": model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "stop",
    }


def anthropic_text(text, model="test-model"):
    return 200, {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def openai_text(text, model="test-model"):
    return 200, {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1735689600,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def openai_error(status=500, message="internal failure"):
    return status, {"error": {"message": message, "type": "server_error", "code": None}}


def ollama_error(status=500, message="the model crashed"):
    return status, {"error": message}


def anthropic_error(status=500, message="internal failure"):
    return status, {"type": "error", "error": {"type": "api_error", "message": message}}


class LLMServer:
    """Scripted replies per API; `delay` seconds before a reply make timeouts testable."""

    def __init__(self):
        self.replies = {"ollama": deque(), "anthropic": deque(), "openai": deque()}
        self.requests = []  # (api, parsed JSON body)
        self.headers = []  # (api, request headers)
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                api = ROUTES.get(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if api is None:
                    return self._send(404, {"error": f"no route {self.path}"})
                server.requests.append((api, json.loads(body or b"{}")))
                server.headers.append((api, dict(self.headers)))
                if not server.replies[api]:
                    return self._send(500, {"error": "the test scripted no reply"})
                status, payload, delay = server.replies[api].popleft()
                if delay and server.stopping.wait(delay):
                    return None
                return self._send(status, payload)

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (
                    BrokenPipeError,
                    ConnectionResetError,
                ):  # the client gave up (timeout tests)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def reply(self, api, response, delay=0.0):
        status, payload = response
        self.replies[api].append((status, payload, delay))

    def sent(self, api):
        return [body for name, body in self.requests if name == api]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def write_config(root, text):
    """ROOT/.lackjail/config.toml, as a user would write it, and ROOT listed as trusted in the
    user's own config ($XDG_CONFIG_HOME, private to each test), so its endpoints count."""
    (root / ".lackjail").mkdir(exist_ok=True)
    (root / ".lackjail" / "config.toml").write_text(text)
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "lackjail" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f"[trust]\nworkspaces = [{json.dumps(str(root))}]\n")


def clear_provider_env(monkeypatch, tmp_path):
    """No provider settings leak in from the host (nor the user's own config); the test works
    in its own project folder."""
    for name in (
        "OLLAMA_HOST",
        "OLLAMA_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CUSTOM_HEADERS",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-anthropic-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    monkeypatch.chdir(tmp_path)
