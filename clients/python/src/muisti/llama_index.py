"""LlamaIndex long-term memory in muisti: a memory block (`BaseMemoryBlock`) for
LlamaIndex's `Memory`.

```python
from llama_index.core.memory import Memory
from muisti import Client
from muisti.llama_index import MuistiMemoryBlock

memory = Memory.from_defaults(
    session_id="chat-42",
    memory_blocks=[MuistiMemoryBlock(client=Client("http://127.0.0.1:7878"), user_id="alice")],
)
```

What `Memory` flushes out of its short-term history is sent to the server as a
conversation to remember (`POST /v1/memories/extract`: the lasting facts the user stated are
extracted and decided, a changed fact replacing the old one). Each time the memory is read,
the block recalls the user's memories that matter for the latest user message (`POST
/v1/recall`), one line each with the date it holds from, which `Memory` puts into the
prompt (by default in the system message). Needs `pip install 'muisti[llama-index]'`.
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.memory.memory import BaseMemoryBlock

from .client import Client

__all__ = ["MuistiMemoryBlock"]

_EXTRACTED = {MessageRole.USER: "user", MessageRole.ASSISTANT: "assistant"}


def _line(text: str) -> str:
    """One line of data: a memory's own line breaks cannot start a line of the prompt."""
    return " ".join(text.split())


class MuistiMemoryBlock(BaseMemoryBlock[str]):
    """The user's long-term memories in muisti, recalled for the latest user message and
    formed from what the short-term memory flushes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="muisti", description="The name of the memory block.")
    client: Client = Field(description="The muisti client.")
    user_id: str = Field(description="The user whose memories these are.")
    namespace: Optional[str] = Field(default=None, description="The namespace (default `default`).")
    limit: int = Field(default=5, description="Most memories recalled into the prompt.")
    accept_short_term_memory: bool = Field(default=True, description="Form memories from flushed messages.")

    def _where(self) -> dict[str, Any]:
        return {"namespace": self.namespace} if self.namespace else {}

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        query = next(
            (m.content for m in reversed(messages or []) if m.role == MessageRole.USER and m.content),
            None,
        )
        if not query:
            return ""
        hits = await asyncio.to_thread(
            self.client.recall, query, limit=self.limit, user_id=self.user_id, **self._where()
        )
        lines = []
        for hit in hits:
            m = hit.memory
            text = m.content if isinstance(m.content, str) else str(m.content)
            lines.append(f"- {_line(text)} (since {m.valid_from or m.created_at})")
        return "\n".join(lines)

    async def _aput(self, messages: List[ChatMessage]) -> None:
        said = [
            {"role": _EXTRACTED[m.role], "content": m.content}
            for m in messages
            if m.role in _EXTRACTED and m.content and m.content.strip()
        ]
        if said:
            await asyncio.to_thread(self.client.extract, said, user_id=self.user_id, **self._where())
