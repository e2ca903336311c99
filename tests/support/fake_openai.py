"""A fake OpenAI-compatible chat-completions endpoint on 127.0.0.1, speaking its real wire format
(`POST /v1/chat/completions` → a `chat.completion` object). Replies come from a queue; a reply may also be
an HTTP status to fail with, or a delay before answering."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FakeOpenAI:
    replies: list[str | int] = field(default_factory=list)  # content text, or an HTTP status to answer with
    delay_s: float = 0.0
    requests: list[dict] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                fake.requests.append(body)
                time.sleep(fake.delay_s)
                reply = fake.replies.pop(0) if fake.replies else "{}"
                if isinstance(reply, int):
                    return self._send(reply, {"error": {"message": "upstream failure", "type": "server_error"}})
                self._send(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                                 "model": body.get("model", "fake"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": reply}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:  # the client gave up waiting (the slow-model tests)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
