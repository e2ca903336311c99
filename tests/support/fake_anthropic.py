"""A recording fake of the Anthropic Messages API on 127.0.0.1, speaking its real wire format.

Claude Code (and later the gateway and the LLM adapters) talk to it exactly as to the hosted API:
`POST /v1/messages` answered with Server-Sent Events when `"stream": true` (message_start,
content_block_start/delta/stop, message_delta, message_stop) or with one JSON message otherwise, and
`POST /v1/messages/count_tokens`. Every request body is recorded. Replies come from a queue of planned
turns, so a test decides the text, tool calls, thinking blocks and `usage` Claude Code will store.
"""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One planned assistant turn."""

    content: list[dict]  # content blocks: text / thinking / tool_use
    input_tokens: int = 1000
    output_tokens: int = 50
    cache_read: int = 0
    cache_creation: int = 0
    stop_reason: str | None = None

    @classmethod
    def text(cls, text: str, **kw: Any) -> "Reply":
        return cls([{"type": "text", "text": text}], **kw)


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict


@dataclass
class FakeAnthropic:
    replies: list[Reply] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: Reply.text("好的。"))
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def messages_requests(self) -> list[dict]:
        """Bodies of real conversation requests (not token counts)."""
        return [r.body for r in self.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]

    def next_reply(self) -> Reply:
        with self._lock:
            return self.replies.pop(0) if self.replies else self.default

    def start(self) -> "FakeAnthropic":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                        "message": "body is not JSON"}})
                path = self.path.split("?")[0]
                with fake._lock:
                    fake.requests.append(Recorded(self.path, dict(self.headers), body))
                if path == "/v1/messages/count_tokens":
                    return self._json(200, {"input_tokens": 100})
                if path != "/v1/messages":
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                        "message": f"no route {path}"}})
                reply = fake.next_reply()
                message = _message(reply, body.get("model", "claude-sonnet-4-5"))
                if body.get("stream"):
                    return self._stream(message)
                return self._json(200, message)

            def do_GET(self) -> None:  # noqa: N802
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event, data in _sse_events(message):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _message(reply: Reply, model: str) -> dict:
    stop = reply.stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in reply.content) else "end_turn")
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
        "content": reply.content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "cache_creation_input_tokens": reply.cache_creation,
                  "cache_read_input_tokens": reply.cache_read, "output_tokens": reply.output_tokens},
    }


def _sse_events(message: dict):
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        elif kind == "thinking":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "thinking_delta", "thinking": block["thinking"]}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "signature_delta", "signature": block["signature"]}}
        elif kind == "tool_use":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "tool_use", "id": block["id"],
                                                            "name": block["name"], "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"], ensure_ascii=False)}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}
