"""`MuistiChatMessageHistory` (LangChain) against a real server."""

from __future__ import annotations

import uuid

from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from muisti import Client
from muisti.langchain import MuistiChatMessageHistory


def test_messages_round_trip_with_their_tool_calls_and_ids(server):
    client = Client(server.url)
    session = f"lc-{uuid.uuid4()}"
    history = MuistiChatMessageHistory(client, session, user_id="ada")
    assert history.messages == []
    sent = [
        SystemMessage(content="You are terse."),
        HumanMessage(content="What is 6 times 7?", id="m1"),
        AIMessage(content="", tool_calls=[{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-1"}]),
        ToolMessage(content="42", tool_call_id="call-1"),
        AIMessage(content="42.", response_metadata={"model": "scripted"}),
        ChatMessage(role="critic", content="Correct."),
    ]
    history.add_messages(sent)
    assert history.messages == sent
    # A second history over a new client reads the same conversation: it is the server's.
    again = MuistiChatMessageHistory(Client(server.url), session)
    assert again.messages == sent
    # The server shows it as a conversation of the user, with readable roles and text.
    detail = client.conversation(session)
    assert detail.user_id == "ada"
    assert [m.role for m in detail.items] == ["system", "user", "assistant", "tool", "assistant", "critic"]
    assert detail.items[2].content == "(calls multiply)"
    history.add_user_message("thanks")
    assert history.messages[-1] == HumanMessage(content="thanks")
    history.clear()
    assert history.messages == []


def test_messages_written_by_another_client_read_by_role(server):
    client = Client(server.url)
    session = f"other-{uuid.uuid4()}"
    client.append_messages(session, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    history = MuistiChatMessageHistory(client, session)
    assert history.messages == [HumanMessage(content="hi"), AIMessage(content="hello")]


async def test_the_async_methods(server):
    history = MuistiChatMessageHistory(Client(server.url), f"async-{uuid.uuid4()}")
    await history.aadd_messages([HumanMessage(content="one"), AIMessage(content="two")])
    assert [m.content for m in await history.aget_messages()] == ["one", "two"]
    await history.aclear()
    assert await history.aget_messages() == []
