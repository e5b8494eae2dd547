"""examples/langgraph_agent.py against a real server and a scripted OpenAI-compatible model on
loopback: what the user said in one run is recalled into the prompt of the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from scripted import ScriptedModel

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_agent.py"


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
