"""A tiny OpenAI-compatible HTTP server (chat.completions and responses, streaming or not) for tests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = ["The answer", " is 4."]
TOOL_ARGS = ['{"expression": ', '"2+2"}']


def _usage_chat() -> dict[str, Any]:
    return {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 200},
        "completion_tokens_details": {"reasoning_tokens": 10},
    }


def _usage_responses() -> dict[str, Any]:
    return {
        "input_tokens": 1200,
        "output_tokens": 300,
        "total_tokens": 1500,
        "input_tokens_details": {"cached_tokens": 200},
        "output_tokens_details": {"reasoning_tokens": 10},
    }


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(ANSWER)}
    finish = "stop"
    if body.get("tools"):
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": "".join(TOOL_ARGS)},
                }
            ],
        }
        finish = "tool_calls"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage_chat(),
    }


def chat_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()), "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if body.get("tools"):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "calculator", "arguments": TOOL_ARGS[0]},
                        }
                    ]
                }
            )
        )
        chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": TOOL_ARGS[1]}}]}))
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks.extend(chunk({"content": piece}) for piece in ANSWER)
        chunks.append(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage_chat()})
    return chunks


def response_object(body: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if body.get("tools"):
        output.append(
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "calculator",
                "arguments": "".join(TOOL_ARGS),
                "status": "completed",
            }
        )
    else:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(ANSWER), "annotations": []}],
            }
        )
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": int(time.time()),
        "model": body["model"],
        "status": "completed",
        "output": output,
        "usage": _usage_responses(),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }


def response_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    final = response_object(body)
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "sequence_number": 0, "response": started}]
    if not body.get("tools"):
        for n, piece in enumerate(ANSWER):
            events.append(
                {
                    "type": "response.output_text.delta",
                    "sequence_number": n + 1,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            )
    events.append({"type": "response.completed", "sequence_number": len(events), "response": final})
    return events


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.server.requests.append({"path": self.path, "body": body})  # type: ignore[attr-defined]
        time.sleep(0.02)  # some latency to measure
        if self.path.endswith("/chat/completions"):
            full, events = chat_completion(body), [(None, c) for c in chat_chunks(body)]
        elif self.path.endswith("/responses"):
            full, events = response_object(body), [(e["type"], e) for e in response_events(body)]
        else:
            self.send_error(404)
            return
        if not body.get("stream"):
            payload = json.dumps(full).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, event in events:
            text = (f"event: {name}\n" if name else "") + f"data: {json.dumps(event)}\n\n"
            self._chunk(text.encode())
            time.sleep(0.005)
        if self.path.endswith("/chat/completions"):
            self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class FakeOpenAI:
    """`with FakeOpenAI() as fake:` then point the openai client at `fake.base_url`."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.requests = []  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests  # type: ignore[attr-defined,no-any-return]

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
