"""`MuistiSession` with the OpenAI Agents SDK's own `Runner`, a real server and a scripted
OpenAI-compatible model on loopback: the session's earlier turns reach the model's next
prompt, and the items live in a server conversation."""

from __future__ import annotations

import uuid

from optional import need_module
from scripted import ScriptedModel

from muisti import Client

need_module("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from muisti.agents import MuistiSession  # noqa: E402


def agent(model: ScriptedModel) -> Agent:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=model.url, api_key="scripted")
    return Agent(name="assistant", instructions="Be brief.", model=OpenAIChatCompletionsModel(model="scripted", openai_client=client))


async def test_a_session_carries_the_conversation_across_runs(server):
    model = ScriptedModel("Noted.")
    conversation = f"agents-{uuid.uuid4()}"
    session = MuistiSession(conversation, Client(server.url), user_id="ana")
    assert await session.get_items() == []

    await Runner.run(agent(model), "My sister is called Ines.", session=session)
    # A new session object over a new client: the history is the server's.
    again = MuistiSession(conversation, Client(server.url), user_id="ana")
    result = await Runner.run(agent(model), "What is my sister called?", session=again)
    assert result.final_output == "Noted."
    second = model.texts(1)
    assert "My sister is called Ines." in second, second
    assert second.index("My sister is called Ines.") < second.index("What is my sister called?")

    items = await again.get_items()
    assert [i.get("role") for i in items] == ["user", "assistant", "user", "assistant"]
    assert items[0]["content"] == "My sister is called Ines."
    assert await again.get_items(limit=1) == items[-1:]
    detail = Client(server.url).conversation(conversation)
    assert detail.user_id == "ana"
    assert [m.role for m in detail.items] == ["user", "assistant", "user", "assistant"]
    assert detail.items[1].content == "Noted."

    # pop_item takes back the last item (the SDK's undo), then clear_session empties it.
    assert await again.pop_item() == items[-1]
    assert await again.get_items() == items[:-1]
    await again.add_items([{"role": "user", "content": "Thanks"}])
    assert (await again.get_items())[-1] == {"role": "user", "content": "Thanks"}
    await again.clear_session()
    assert await again.get_items() == []
    assert await again.pop_item() is None


async def test_session_settings_limit_what_the_model_sees(server):
    from agents.memory import SessionSettings

    model = ScriptedModel("Ok.")
    session = MuistiSession(f"agents-{uuid.uuid4()}", Client(server.url), session_settings=SessionSettings(limit=2))
    for n in range(3):
        await Runner.run(agent(model), f"turn {n}", session=session)
    # The third run's prompt: the last two items of the session, then the new turn.
    third = model.texts(2)
    assert "turn 0" not in third, third
    assert third[-3:] == ["turn 1", "Ok.", "turn 2"], third
    assert [i.get("content") for i in await session.get_items()][0] == "turn 2"
    assert len(await session.get_items()) == 2
    assert len(await session.get_items(limit=10)) == 6


async def test_a_session_never_acts_on_another_users_conversation(server):
    from muisti.errors import ConflictError

    conversation = f"agents-{uuid.uuid4()}"
    client = Client(server.url)
    client.append_messages(conversation, [{"role": "user", "content": "Ana's secret"}], user_id="ana")
    bob = MuistiSession(conversation, client, user_id="bob")
    for call in (bob.get_items(), bob.pop_item(), bob.clear_session()):
        try:
            await call
        except ConflictError:
            continue
        raise AssertionError("another user's conversation was reached")
    assert [m.content for m in client.conversation(conversation).items] == ["Ana's secret"]
