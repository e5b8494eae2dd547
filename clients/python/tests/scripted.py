"""A scripted OpenAI-compatible chat model on loopback: the real wire protocol
(`POST /v1/chat/completions`), scripted replies and tool calls, every request kept."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional, Union


class ScriptedModel:
    """Answers every chat completion with a fixed reply and keeps the requests."""

    def __init__(self, reply: str, *, script: Optional[list[Union[str, dict]]] = None) -> None:
        """Every request answered with `reply`, or the first ones in turn by `script`: a
        text, or a tool call `{"name": ..., "arguments": {...}}`."""
        self.requests: list[dict] = []
        outer = self
        turns = list(script or [])

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append(body)
                turn = turns.pop(0) if turns else reply
                if isinstance(turn, dict):
                    call = {"id": f"call-{len(outer.requests)}", "type": "function",
                            "function": {"name": turn["name"], "arguments": json.dumps(turn["arguments"])}}
                    message = {"role": "assistant", "content": None, "tool_calls": [call]}
                    finish = "tool_calls"
                else:
                    message, finish = {"role": "assistant", "content": turn}, "stop"
                answer = {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def texts(self, request: int) -> list[str]:
        """The message texts of one request, in order."""
        out = []
        for m in self.requests[request]["messages"]:
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append(content or "")
        return out
