"""The OpenAI Agents SDK's session memory (`agents.memory.Session`) kept as a muisti conversation.

```python
from agents import Agent, Runner
from muisti import Client
from muisti.agents import MuistiSession

session = MuistiSession("chat-42", Client("http://127.0.0.1:7878"), user_id="alice")
result = await Runner.run(agent, "I moved to Porto", session=session)
```

Each item the SDK adds is one message of the conversation `session_id` (`POST
/v1/conversations/{id}/messages`): its role (`user`, `assistant`, `system`, `developer`, or
`tool` for tool calls and their outputs), its text, and the SDK's whole item under the
message's `extra`, so `get_items` returns the items that were added, tool calls included.
The conversation is the server's: the dashboard, the server's agent and the other clients see
it, memories can be extracted from it (`POST /v1/memories/extract`, or the server's
background extraction), and `pop_item` takes back the last message
(`DELETE /v1/conversations/{id}/messages/last`). Needs `pip install 'muisti[agents]'`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from agents.memory import SessionSettings

from .client import Client
from .errors import ConflictError, NotFoundError

__all__ = ["MuistiSession"]

# Messages per request (the server takes at most 200).
BATCH = 200

_ROLES = {"user", "assistant", "system", "developer"}

# Most characters of an item's text shown as its message (the whole item is kept beside it):
# a tool's long output is not stored twice.
SHOWN = 8192


def _text(item: dict[str, Any]) -> str:
    """The item's text as the conversation shows it (never blank)."""
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    else:
        text = str(item.get("output", "")) if "output" in item else ""
    if text.strip():
        return text if len(text) <= SHOWN else text[:SHOWN] + " …"
    kind = item.get("type", "message")
    name = item.get("name")
    return f"({kind} {name})" if name else f"({kind})"


def _role(item: dict[str, Any]) -> str:
    role = item.get("role")
    if isinstance(role, str) and role in _ROLES:
        return role
    return "tool"


def _item(message: Any) -> dict[str, Any]:
    """A stored message as the SDK's input item: as it was added, or (written by another
    client) an easy input message by its role."""
    kept = (message.extra or {}).get("agents")
    if isinstance(kept, dict):
        return kept
    role = message.role if message.role in _ROLES else "user"
    return {"role": role, "content": message.content}


class MuistiSession:
    """A session (the Agents SDK's `Session` protocol) kept as the muisti conversation
    `session_id` (of `user_id`, if given). The client is blocking: calls run on a worker
    thread."""

    def __init__(
        self,
        session_id: str,
        client: Client,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        session_settings: Optional[SessionSettings] = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.user_id = user_id
        self.agent_id = agent_id
        self.session_settings = session_settings or SessionSettings()

    def _conversation(self) -> Any:
        """The conversation (`None` when it does not exist), if this session may act on it: one
        of another user is refused (`ConflictError`, as the server refuses appending to it);
        one of no user is anyone's."""
        try:
            conversation = self.client.conversation(self.session_id)
        except NotFoundError:
            return None
        owner = conversation.user_id
        if self.user_id and owner and owner != self.user_id:
            message = f"conversation {self.session_id!r} is another user's"
            raise ConflictError(409, "conflicting_fields", message)
        return conversation

    def _items(self, limit: Optional[int]) -> list[dict[str, Any]]:
        conversation = self._conversation()
        if conversation is None:
            return []
        items = [_item(m) for m in conversation.items]
        if limit is None:
            limit = self.session_settings.limit
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    def _add(self, items: list[dict[str, Any]]) -> None:
        wire = [
            {"role": _role(item), "content": _text(item), "extra": {"agents": dict(item)}}
            for item in items
        ]
        for start in range(0, len(wire), BATCH):
            fields: dict[str, Any] = {}
            if self.user_id:
                fields["user_id"] = self.user_id
            if self.agent_id:
                fields["agent_id"] = self.agent_id
            self.client.append_messages(self.session_id, wire[start: start + BATCH], **fields)

    def _pop(self) -> Optional[dict[str, Any]]:
        if self._conversation() is None:
            return None
        try:
            return _item(self.client.pop_message(self.session_id))
        except NotFoundError:
            return None

    def _clear(self) -> None:
        if self._conversation() is None:
            return
        try:
            self.client.delete_conversation(self.session_id)
        except NotFoundError:
            pass

    async def get_items(self, limit: Optional[int] = None) -> list[Any]:
        """The session's items, oldest first: the latest `limit` of them (default: the
        session settings' limit, else all)."""
        return await asyncio.to_thread(self._items, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Appends items, in order (a request per 200)."""
        if items:
            await asyncio.to_thread(self._add, [dict(i) for i in items])

    async def pop_item(self) -> Optional[Any]:
        """Takes back the most recent item and returns it (`None` when there is none)."""
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Deletes the conversation (its messages, and its scratch and short-term memories)."""
        await asyncio.to_thread(self._clear)
