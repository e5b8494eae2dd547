"""docs/mcp.md's configurations, each started as an editor would start it and driven with the
official MCP Python SDK: the stdio ones spawn their command (the built binary for `muisti`)
with their arguments and environment, the HTTP one connects to a real `muisti serve`."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from conftest import ROOT, need_binary
from optional import need_module

need_module("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
import httpx  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

GUIDE = ROOT / "docs" / "mcp.md"


def configs() -> list[dict]:
    """The JSON blocks of the guide: each editor's entry for muisti."""
    blocks = re.findall(r"```json\n(.*?)```", GUIDE.read_text(), re.S)
    out = []
    for block in blocks:
        doc = json.loads(block)
        servers = doc.get("mcpServers") or doc.get("servers")
        out.append(servers["muisti"])
    return out


def test_the_guide_has_stdio_and_http_configurations():
    entries = configs()
    assert sum("command" in e for e in entries) >= 3
    assert sum("url" in e for e in entries) == 1
    assert all(e.get("command") == "muisti" and e.get("args") == ["mcp"] for e in entries if "command" in e)


async def exercise(session: ClientSession) -> None:
    await session.initialize()
    names = {t.name for t in (await session.list_tools()).tools}
    assert {"remember", "recall", "forget", "list"} <= names, names
    user = f"mcp-{uuid.uuid4().hex[:8]}"
    stored = await session.call_tool("remember", {"content": "I keep bees on my balcony", "user_id": user})
    assert not stored.isError, stored
    found = await session.call_tool("recall", {"query": "what do I keep on the balcony", "user_id": user})
    assert not found.isError, found
    hits = found.structuredContent["hits"]
    assert hits and hits[0]["memory"]["content"] == "I keep bees on my balcony", hits
    other = await session.call_tool("recall", {"query": "balcony bees", "user_id": f"{user}-other"})
    assert other.structuredContent["hits"] == []


@pytest.mark.parametrize("index", range(len([e for e in configs() if "command" in e])))
async def test_each_stdio_configuration_serves_the_tools(index, tmp_path):
    entry = [e for e in configs() if "command" in e][index]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("MUISTI_STORE", None)
    for k, v in entry.get("env", {}).items():
        # The guide's example path, moved under this test's directory.
        env[k] = v.replace("/home/me/.local/share", str(tmp_path / "data")) if k == "MUISTI_STORE" else v
    if "MUISTI_STORE" in env:
        Path(env["MUISTI_STORE"].removeprefix("sqlite://")).parent.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(command=need_binary(), args=entry["args"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await exercise(session)
    if "MUISTI_STORE" in entry.get("env", {}):
        assert (tmp_path / "data" / "muisti" / "cursor.db").exists(), "the configured store was used"


async def test_the_http_configuration_serves_the_tools(keyed_server):
    entry = next(e for e in configs() if "url" in e)
    url = entry["url"].replace("http://127.0.0.1:7878", keyed_server.url)
    headers = {k: v.replace("KEY", keyed_server.api_key) for k, v in entry["headers"].items()}
    async with httpx.AsyncClient(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await exercise(session)
