"""CrewAI memory kept in muisti: `MuistiMemory`, CrewAI's own `Memory` (CrewAI 1.x) whose
records are one user's memories in muisti and whose recall is muisti's.

```python
from crewai import Agent, Crew, Task
from muisti import Client
from muisti.crewai import MuistiMemory

memory = MuistiMemory(client=Client("http://127.0.0.1:7878"), user_id="research-crew")
crew = Crew(agents=[...], tasks=[...], memory=memory)
```

What a crew remembers (each task's outcome, as CrewAI's `extract_memories` words it) is
stored as the user's memories; what an agent recalls before a task is muisti's recall for the
task's text, one line per memory. CrewAI's own `Memory` embeds every record and query with its
embedder and asks its LLM to place each record and to rewrite queries; this one does neither:
records are stored as given (scope `/` and importance 0.5 unless given) and queries are
recalled by their text, so a crew needs no embedding model for memory. `extract_memories`
stays CrewAI's (its LLM words a task's outcome as memories; without one the whole outcome is
one memory).

A record's CrewAI fields are kept in the memory: its scope as tags (`scope:/a`, `scope:/a/b`
for `/a/b`, so that recall and listing within a scope are filters of muisti's), its categories
as tags (`category:x`), its metadata, source and privacy in the memory's metadata under
`crewai`. `MuistiStorage` is the same mapping as CrewAI's storage interface
(`StorageBackend`), for CrewAI's listing, `forget`, `reset` and scope views; it cannot search
by CrewAI's embeddings, and says so. Needs `pip install 'muisti[crewai]'`.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any, Literal, Optional

from crewai.memory.types import MemoryMatch, MemoryRecord, ScopeInfo
from crewai.memory.unified_memory import Memory
from pydantic import Field

from .client import Client
from .errors import NotFoundError

__all__ = ["MuistiMemory", "MuistiStorage"]

# The longest scope path kept as a tag (a tag is at most 64 characters).
_MAX_SCOPE = 58
# Memories a listing reads a page at a time.
_PAGE = 500


def _line(text: str) -> str:
    """One line of data: a memory's own line breaks cannot start a line of the prompt."""
    return " ".join(text.split())


def _scope(path: Optional[str]) -> str:
    """A scope path as CrewAI writes them: `/`, or `/a/b` without a trailing slash."""
    parts = [p for p in (path or "/").split("/") if p]
    scope = "/" + "/".join(parts)
    if len(scope) > _MAX_SCOPE:
        raise ValueError(f"scope {scope!r} is longer than {_MAX_SCOPE} characters")
    return scope


def _join(root: Optional[str], scope: Optional[str]) -> str:
    return _scope(f"{root or ''}/{scope or ''}")


def _scope_tags(scope: str) -> list[str]:
    """The scope and each scope above it, as tags."""
    parts = [p for p in scope.split("/") if p]
    return ["scope:/"] + [f"scope:/{'/'.join(parts[: i + 1])}" for i in range(len(parts))]


def _time(text: Optional[str]) -> datetime:
    if not text:
        return datetime.now(timezone.utc)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _record(memory: Any, one_line: bool = False) -> MemoryRecord:
    """A muisti memory as CrewAI's record."""
    meta = dict(memory.metadata or {})
    crew = meta.pop("crewai", None) or {}
    text = memory.content if isinstance(memory.content, str) else str(memory.content)
    return MemoryRecord(
        id=memory.id,
        content=_line(text) if one_line else text,
        scope=crew.get("scope", "/"),
        categories=list(crew.get("categories", [])),
        metadata=meta,
        importance=memory.importance,
        created_at=_time(memory.created_at),
        last_accessed=_time(memory.last_accessed_at or memory.updated_at),
        source=crew.get("source"),
        private=bool(crew.get("private", False)),
    )


class MuistiStorage:
    """CrewAI's storage interface (`crewai.memory.storage.backend.StorageBackend`) over one
    user's memories in muisti (in `namespace`, default `default`)."""

    def __init__(self, client: Client, user_id: str, namespace: Optional[str] = None) -> None:
        self.client = client
        self.user_id = user_id
        self.namespace = namespace

    def _new(self, record: MemoryRecord) -> dict[str, Any]:
        scope = _scope(record.scope)
        crew: dict[str, Any] = {"scope": scope, "categories": list(record.categories)}
        if record.source is not None:
            crew["source"] = record.source
        if record.private:
            crew["private"] = True
        memory: dict[str, Any] = {
            "content": record.content,
            "user_id": self.user_id,
            "importance": record.importance,
            "tags": _scope_tags(scope) + [f"category:{c}" for c in record.categories],
            "metadata": {**(record.metadata or {}), "crewai": crew},
        }
        if self.namespace:
            memory["namespace"] = self.namespace
        return memory

    def save(self, records: list[MemoryRecord]) -> None:
        """Stores the records, a thousand at a time; each record takes its memory's id."""
        for start in range(0, len(records), 1000):
            chunk = records[start : start + 1000]
            stored = self.client.remember_many([self._new(r) for r in chunk])
            for record, memory in zip(chunk, stored):
                record.id = memory.id

    def search(self, query_embedding: list[float], *args: Any, **kwargs: Any) -> list[tuple[MemoryRecord, float]]:
        raise TypeError(
            "muisti recalls by a query's text, not by CrewAI's embeddings: use MuistiMemory, "
            "whose recall() asks muisti"
        )

    def _records(self, scope_prefix: Optional[str] = None) -> list[MemoryRecord]:
        """Every record of the user within the scope (a tag filter of muisti's), a page at a
        time."""
        tags = _scope_tags(_scope(scope_prefix))[-1:] if scope_prefix else None
        out: list[MemoryRecord] = []
        cursor = None
        while True:
            page = self.client.list(
                user_id=self.user_id, namespace=self.namespace, tags=tags, cursor=cursor, limit=_PAGE
            )
            out.extend(_record(m) for m in page.items)
            cursor = page.next_cursor
            if not cursor:
                return out

    def delete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[list[str]] = None,
        record_ids: Optional[list[str]] = None,
        older_than: Optional[datetime] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
    ) -> int:
        """Deletes the user's records that match every criterion given; how many."""
        if record_ids is not None:
            candidates = [r for r in (self.get_record(i) for i in record_ids) if r is not None]
        else:
            candidates = self._records(scope_prefix)
        deleted = 0
        for r in candidates:
            if scope_prefix and not _within(r.scope, _scope(scope_prefix)):
                continue
            if categories and not set(categories) & set(r.categories):
                continue
            if older_than is not None and r.created_at >= _aware(older_than):
                continue
            if metadata_filter and any(r.metadata.get(k) != v for k, v in metadata_filter.items()):
                continue
            try:
                self.client.forget(r.id, user_id=self.user_id)
                deleted += 1
            except NotFoundError:
                pass
        return deleted

    def update(self, record: MemoryRecord) -> None:
        """Writes the record's content, scope, categories, metadata and importance."""
        if self.get_record(record.id) is None:
            raise ValueError(f"Record not found: {record.id}")
        new = self._new(record)
        self.client.update(
            record.id,
            content=new["content"],
            importance=new["importance"],
            tags=new["tags"],
            metadata=new["metadata"],
        )

    def get_record(self, record_id: str) -> Optional[MemoryRecord]:
        try:
            return _record(self.client.get(record_id, user_id=self.user_id))
        except NotFoundError:
            return None

    def list_records(self, scope_prefix: Optional[str] = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        """The user's records within the scope, newest first."""
        records = self._records(scope_prefix)
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = _scope(scope)
        records = self._records(path)
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=path,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(times) if times else None,
            newest_record=max(times) if times else None,
            child_scopes=_children(records, path),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The scopes one level below `parent` that hold records."""
        path = _scope(parent)
        return _children(self._records(path), path)

    def list_categories(self, scope_prefix: Optional[str] = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self._records(scope_prefix):
            for c in r.categories:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: Optional[str] = None) -> int:
        return len(self._records(scope_prefix))

    def reset(self, scope_prefix: Optional[str] = None) -> None:
        """Deletes the user's records within the scope (all of them without one)."""
        if scope_prefix is None or _scope(scope_prefix) == "/":
            self.client.forget_all(user_id=self.user_id, namespace=self.namespace)
        else:
            self.delete(scope_prefix=scope_prefix)

    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], *args: Any, **kwargs: Any) -> list[tuple[MemoryRecord, float]]:
        return self.search(query_embedding, *args, **kwargs)

    async def adelete(self, **kwargs: Any) -> int:
        return await asyncio.to_thread(self.delete, **kwargs)


def _children(records: list[MemoryRecord], path: str) -> list[str]:
    """The scopes one level below `path` that the records (all within it) are in."""
    depth = len([p for p in path.split("/") if p])
    children = set()
    for r in records:
        parts = [p for p in r.scope.split("/") if p]
        if len(parts) > depth:
            children.add("/" + "/".join(parts[: depth + 1]))
    return sorted(children)


def _within(scope: str, prefix: str) -> bool:
    return prefix == "/" or scope == prefix or scope.startswith(prefix + "/")


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


class MuistiMemory(Memory):
    """CrewAI's `Memory` over one user's memories in muisti: give it to `Crew(memory=...)` or
    `Agent(memory=...)`."""

    client: Any = Field(description="The muisti client (`muisti.Client`).")
    user_id: str = Field(description="The user whose memories these are (the crew's, or a person's).")
    namespace: Optional[str] = Field(default=None, description="The namespace (default `default`).")

    def model_post_init(self, __context: Any) -> None:
        self.storage = MuistiStorage(self.client, self.user_id, self.namespace)
        super().model_post_init(__context)

    @property
    def muisti(self) -> MuistiStorage:
        return self._storage  # type: ignore[return-value]

    def remember(
        self,
        content: str,
        scope: Optional[str] = None,
        categories: Optional[list[str]] = None,
        metadata: Optional[dict[str, Any]] = None,
        importance: Optional[float] = None,
        source: Optional[str] = None,
        private: bool = False,
        agent_role: Optional[str] = None,
        root_scope: Optional[str] = None,
    ) -> Optional[MemoryRecord]:
        """Stores `content` as it is (no LLM placing it); the stored record."""
        records = self.remember_many(
            [content], scope, categories, metadata, importance, source, private, agent_role, root_scope
        )
        return records[0] if records else None

    def remember_many(
        self,
        contents: list[str],
        scope: Optional[str] = None,
        categories: Optional[list[str]] = None,
        metadata: Optional[dict[str, Any]] = None,
        importance: Optional[float] = None,
        source: Optional[str] = None,
        private: bool = False,
        agent_role: Optional[str] = None,
        root_scope: Optional[str] = None,
    ) -> list[MemoryRecord]:
        """Stores each text (empty ones left out) in one batch; the stored records."""
        if self.read_only:
            return []
        meta = dict(metadata or {})
        if agent_role:
            meta.setdefault("agent_role", agent_role)
        records = [
            MemoryRecord(
                content=text,
                scope=_join(root_scope or self.root_scope, scope),
                categories=list(categories or []),
                metadata=meta,
                importance=self.default_importance if importance is None else importance,
                source=source,
                private=private,
            )
            for text in contents
            if text and text.strip()
        ]
        self.muisti.save(records)
        return records

    def recall(
        self,
        query: str,
        scope: Optional[str] = None,
        categories: Optional[list[str]] = None,
        limit: int = 10,
        depth: Literal["shallow", "deep"] = "deep",
        source: Optional[str] = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """muisti's recall for `query` within the scope (by its text, at either depth); each
        record's content on one line, as CrewAI puts it into a prompt."""
        if not query or not query.strip():
            return []
        path = _join(self.root_scope, scope) if (scope or self.root_scope) else "/"
        tags = _scope_tags(path)[-1:] if path != "/" else []
        if categories and len(categories) == 1:
            tags.append(f"category:{categories[0]}")
        # Filters muisti does not have (any of several categories; another source's private
        # records) are applied here, on a larger recall.
        extra = bool(categories and len(categories) > 1) or not include_private
        fields: dict[str, Any] = {"namespace": self.namespace} if self.namespace else {}
        if tags:
            fields["filters"] = {"tags": tags}
        hits = self.client.recall(
            query, limit=min(100, limit * 3) if extra else limit, user_id=self.user_id, **fields
        )
        matches = []
        for hit in hits:
            record = _record(hit.memory, one_line=True)
            if categories and not set(categories) & set(record.categories):
                continue
            if record.private and not include_private and record.source != source:
                continue
            matches.append(MemoryMatch(record=record, score=hit.score, match_reasons=["muisti"]))
            if len(matches) == limit:
                break
        return matches

    def update(
        self,
        record_id: str,
        content: Optional[str] = None,
        scope: Optional[str] = None,
        categories: Optional[list[str]] = None,
        metadata: Optional[dict[str, Any]] = None,
        importance: Optional[float] = None,
    ) -> MemoryRecord:
        """Changes the fields given of one of the user's records."""
        existing = self.muisti.get_record(record_id)
        if existing is None:
            raise ValueError(f"Record not found: {record_id}")
        if self.read_only:
            return existing
        updates: dict[str, Any] = {}
        for name, value in (
            ("content", content),
            ("scope", scope),
            ("categories", categories),
            ("metadata", metadata),
            ("importance", importance),
        ):
            if value is not None:
                updates[name] = value
        updated = existing.model_copy(update=updates)
        self.muisti.update(updated)
        return updated
