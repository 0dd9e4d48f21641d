"""A tiny HTTP server on loopback that answers like an OpenAI-compatible chat endpoint or a scoring webhook,
and records what it was sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict[str, Any], dict[str, str]], tuple[int, Any]]


class FakeEndpoint:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.path, body, headers))
                status, payload = outer.answer(self.path, body, headers)
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def chat_answer(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "judge",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}
