"""Drives muisti's MCP server with the official Python SDK (`pip install mcp`).

Usage:
  mcp_client.py stdio MUISTI_BIN STORE_URL
  mcp_client.py http URL API_KEY

Lists the tools, calls remember then recall, and prints one JSON object with what it saw.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


async def exercise(session):
    await session.initialize()
    tools = await session.list_tools()
    names = sorted(t.name for t in tools.tools)
    schemas = {t.name: t.inputSchema for t in tools.tools}
    stored = await session.call_tool(
        "remember", {"content": "I moved to Lisbon in March", "user_id": "alice"}
    )
    recalled = await session.call_tool(
        "recall", {"query": "which city does the user live in now", "limit": 3}
    )
    await session.call_tool(
        "remember", {"content": "Lisbon is my favourite city", "tags": ["travel"]}
    )
    # Alice's memory; the other belongs to no user, so every user's memories are asked for.
    similar = await session.call_tool(
        "similar", {"id": stored.structuredContent["id"], "limit": 3, "all_users": True}
    )
    filtered = await session.call_tool(
        "recall", {"query": "lisbon", "tags": ["travel"], "mode": "lexical"}
    )
    stats = await session.call_tool("stats", {})
    await session.call_tool("kv_set", {"key": "tier", "value": "gold"})
    kv_forgot = await session.call_tool("kv_forget", {"key": "tier"})
    try:
        kv_after = await session.call_tool("kv_get", {"key": "tier"})
        kv_after_is_error = bool(kv_after.isError)
    except McpError:  # not found, as a JSON-RPC error
        kv_after_is_error = True
    try:
        bad = await session.call_tool("get", {"id": "not-a-ulid"})
        bad_is_error, bad_text = bool(bad.isError), " ".join(
            getattr(c, "text", "") for c in bad.content
        )
    except McpError as e:  # the server answered with a JSON-RPC error
        bad_is_error, bad_text = True, str(e)
    return {
        "tools": names,
        "remember_schema": schemas.get("remember"),
        "stored": stored.structuredContent,
        "stored_is_error": bool(stored.isError),
        "recalled": recalled.structuredContent,
        "similar": similar.structuredContent,
        "filtered": filtered.structuredContent,
        "stats": stats.structuredContent,
        "kv_forgot_is_error": bool(kv_forgot.isError),
        "kv_after_is_error": kv_after_is_error,
        "bad_is_error": bad_is_error,
        "bad_text": bad_text,
    }


async def run_stdio(binary, store):
    params = StdioServerParameters(command=binary, args=["mcp", "--store", store], env=None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def run_http(url, key):
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        out = await run_stdio(sys.argv[2], sys.argv[3])
    else:
        out = await run_http(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
