"""`MuistiMemoryBlock` in LlamaIndex's own `Memory` against a real server: what the
short-term memory flushes becomes the user's memories, and they come back, dated, in the
system message of a later prompt."""

from __future__ import annotations

import uuid

from optional import need_module

from muisti import Client

need_module("llama_index.core")

from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

from muisti.llama_index import MuistiMemoryBlock  # noqa: E402


def memory(client: Client, user: str) -> Memory:
    return Memory.from_defaults(
        session_id=f"li-{uuid.uuid4()}",
        token_limit=40,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        tokenizer_fn=str.split,
        memory_blocks=[MuistiMemoryBlock(client=client, user_id=user)],
    )


def test_flushed_messages_become_memories_recalled_into_the_prompt(server):
    client = Client(server.url)
    user = f"li-{uuid.uuid4().hex[:8]}"
    mem = memory(client, user)
    mem.put_messages([
        ChatMessage(role="user", content="I live in Oslo and I like tea"),
        ChatMessage(role="assistant", content="Good to know."),
    ])
    for n in range(6):
        mem.put(ChatMessage(role="user", content=f"small talk number {n} about the weather today"))
        mem.put(ChatMessage(role="assistant", content="Indeed."))
    stored = [m.content for m in client.list(user_id=user).items]
    assert any("Oslo" in str(s) for s in stored), stored

    # A new session of the same user: the memory comes back for a question about it.
    later = memory(client, user)
    messages = later.get(input="Which city do I live in?")
    system = messages[0]
    assert system.role == "system", messages
    assert "Oslo" in system.content, system.content
    assert "(since 20" in system.content, system.content


def test_another_users_memories_stay_theirs(server):
    client = Client(server.url)
    client.remember("My locker code is 4812", user_id="li-bo")
    messages = memory(client, "li-eve").get(input="What is the locker code?")
    assert all("4812" not in str(m.content) for m in messages), messages
