"""examples/langgraph_agent.py against a real server and a scripted OpenAI-compatible model on
loopback: what the user said in one run is recalled into the prompt of the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_agent.py"


class ScriptedModel:
    """Answers every chat completion with a fixed reply and keeps the requests."""

    def __init__(self, reply: str) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append(body)
                answer = {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
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


def run(server, model, user: str, message: str) -> str:
    env = {**os.environ, "MUISTI_URL": server.url, "OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": "scripted", "MODEL": "scripted"}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--user", user, message], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_langgraph_agent_remembers_across_runs(server):
    pytest.importorskip("openai")
    model = ScriptedModel("Noted.")
    try:
        user = f"agent-{uuid.uuid4().hex[:8]}"
        assert run(server, model, user, "I moved to Porto last month and I keep a sailboat there") == "Noted."
        assert "Porto" not in model.requests[0]["messages"][0]["content"], "nothing known before"
        assert run(server, model, user, "Where is my sailboat kept?") == "Noted."
        system = model.requests[1]["messages"][0]["content"]
        assert "I moved to Porto last month and I keep a sailboat there" in system
        # The second run resumed the thread checkpointed by the first (another process).
        assert [m["content"] for m in model.requests[1]["messages"][1:]] == [
            "I moved to Porto last month and I keep a sailboat there", "Noted.", "Where is my sailboat kept?",
        ]
        # Another user knows nothing of it.
        run(server, model, f"other-{user}", "Where is my sailboat kept?")
        assert "Porto" not in model.requests[2]["messages"][0]["content"]
    finally:
        model.httpd.shutdown()
