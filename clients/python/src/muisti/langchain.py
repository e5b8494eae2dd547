"""LangChain's chat message history (`BaseChatMessageHistory`) kept as a muisti conversation.

```python
from muisti import Client
from muisti.langchain import MuistiChatMessageHistory

history = MuistiChatMessageHistory(Client("http://127.0.0.1:7878"), session_id="chat-42", user_id="alice")
history.add_user_message("I moved to Porto")
history.messages  # [HumanMessage("I moved to Porto")]
```

Each message is one message of the conversation `session_id` (`POST
/v1/conversations/{id}/messages`): its role (`user`, `assistant`, `system`, `tool`, or a chat
message's own), its text, and LangChain's whole message (`messages_to_dict`) under the
message's `extra`, so what is read back is the message that was added: tool calls, ids and
additional fields included. The conversation is the server's, so the server's agent, the
dashboard and the other clients see it, and ending or deleting it there ends it here. Needs
`pip install 'muisti[langchain]'`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Optional

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from .client import Client
from .errors import NotFoundError

__all__ = ["MuistiChatMessageHistory"]

# Messages per request (the server takes at most 200).
BATCH = 200

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _text(message: BaseMessage) -> str:
    """The message's text as the conversation shows it (never blank: a message of tool calls
    only is shown by the calls' names)."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(
            part if isinstance(part, str) else str(part.get("text", "")) for part in content if part
        )
    if text.strip():
        return text
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return "(calls " + ", ".join(str(c.get("name", "?")) for c in calls) + ")"
    return f"({message.type} message)"


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        role = message.role
        ok = role and len(role) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-.:") for c in role)
        return role if ok else "chat"
    return _ROLES.get(message.type, message.type if message.type.isalnum() else "chat")


def _message(item: Any) -> BaseMessage:
    """A stored message as LangChain's: as it was added, or (written by another client) by
    its role."""
    extra = item.extra or {}
    kept = extra.get("langchain")
    if isinstance(kept, dict):
        return messages_from_dict([kept])[0]
    role, text = item.role, item.content
    if role == "user":
        return HumanMessage(content=text, name=item.name)
    if role == "assistant":
        return AIMessage(content=text, name=item.name)
    if role == "system":
        return SystemMessage(content=text)
    if role == "tool":
        return ToolMessage(content=text, tool_call_id=str(extra.get("tool_call_id", item.name or "")))
    return ChatMessage(role=role, content=text)


class MuistiChatMessageHistory(BaseChatMessageHistory):
    """A chat history kept as the muisti conversation `session_id` (of `user_id`, if given).
    The async methods run the blocking client on a worker thread."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The conversation's messages, oldest first (none when it does not exist)."""
        try:
            conversation = self.client.conversation(self.session_id)
        except NotFoundError:
            return []
        return [_message(item) for item in conversation.items]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends messages, in order (a request per 200)."""
        wire = [
            {
                "role": _role(m),
                "content": _text(m),
                "name": m.name if m.name else None,
                "extra": {"langchain": message_to_dict(m)},
            }
            for m in messages
        ]
        for start in range(0, len(wire), BATCH):
            body: dict[str, Any] = {"messages": [{k: v for k, v in w.items() if v is not None} for w in wire[start: start + BATCH]]}
            if self.user_id:
                body["user_id"] = self.user_id
            if self.agent_id:
                body["agent_id"] = self.agent_id
            self.client.append_messages(self.session_id, **body)

    def clear(self) -> None:
        """Deletes the conversation (its messages, and its scratch and short-term memories)."""
        try:
            self.client.delete_conversation(self.session_id)
        except NotFoundError:
            pass

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
