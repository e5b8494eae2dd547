"""`MuistiStore`: LangGraph's long-term memory store (`BaseStore`) over a muisti server.

Each item is one memory in the muisti namespace `namespace` (default `langgraph.store`): its
muisti key is the item's LangGraph namespace and key (JSON), its metadata holds the value, and
its content is the text the item is searched by (the value's `index` fields, as LangGraph's
own stores choose them). Semantic search is muisti's recall (hybrid full-text and vector, the
server's embedder: no embedding function to configure here); the namespace prefix of a search
is a tag filter on the server; value filters (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`) are
applied to what the server answers. TTLs are muisti's expiry (`ttl` in minutes, as LangGraph
counts), refreshed on read unless told otherwise.

`list_namespaces` reads every item of the store's namespace (one request per 1,000 items).
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Optional, Union

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from .. import types as t
from ..client import Client
from ..errors import NotFoundError
from ._names import check_prefix, digest

__all__ = ["MuistiStore"]

MAX_KEY = 512
# Recall answers at most this many hits; a filtered search asks for this many at most.
MAX_RECALL = 1000


def _prefix_tag(path: tuple[str, ...]) -> str:
    """The tag every item under a namespace prefix carries (`ns<depth>:<digest>`)."""
    return f"ns{len(path)}:{digest(*path)}"


def _compare(actual: Any, condition: Any) -> bool:
    """LangGraph's filter rule: a value, or a dict of `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`."""
    if isinstance(condition, dict) and condition and all(k.startswith("$") for k in condition):
        for op, expected in condition.items():
            try:
                ok = {
                    "$eq": lambda: actual == expected,
                    "$ne": lambda: actual != expected,
                    "$gt": lambda: actual is not None and actual > expected,
                    "$gte": lambda: actual is not None and actual >= expected,
                    "$lt": lambda: actual is not None and actual < expected,
                    "$lte": lambda: actual is not None and actual <= expected,
                }[op]()
            except KeyError:
                raise ValueError(f"unsupported filter operator {op!r}") from None
            except TypeError:
                ok = False
            if not ok:
                return False
        return True
    if isinstance(condition, dict) and isinstance(actual, dict):
        return all(_compare(actual.get(k), v) for k, v in condition.items())
    return actual == condition


def _matches(value: dict[str, Any], filter: Optional[dict[str, Any]]) -> bool:  # noqa: A002
    if not filter:
        return True
    return all(_compare(_lookup(value, k), v) for k, v in filter.items())


def _lookup(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _namespace_matches(namespace: tuple[str, ...], op: ListNamespacesOp) -> bool:
    for condition in op.match_conditions or ():
        path = tuple(condition.path)
        if len(path) > len(namespace):
            return False
        window = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
        if not all(p == "*" or p == n for p, n in zip(path, window)):
            return False
    return True


class MuistiStore(BaseStore):
    """LangGraph's `BaseStore` over a muisti server.

    ```python
    from muisti import Client
    from muisti.langgraph import MuistiStore

    store = MuistiStore(Client("http://127.0.0.1:7878"))
    store.put(("users", "alice"), "seat", {"text": "prefers the window seat"})
    store.search(("users", "alice"), query="where does she sit?")
    graph = builder.compile(store=store)
    ```

    `index`: which fields of a value are searchable (`{"fields": ["text"]}`; default: the
    whole value); the server embeds, so an `embed` function or `dims` there is not used (a
    warning says so). `ttl`: LangGraph's `TTLConfig` (`default_ttl` minutes, `refresh_on_read`).
    The async methods run the blocking client on a worker thread.
    """

    supports_ttl = True

    def __init__(
        self,
        client: Client,
        *,
        namespace: str = "langgraph.store",
        index: Optional[IndexConfig] = None,
        ttl: Optional[TTLConfig] = None,
    ) -> None:
        self.client = client
        self.namespace = check_prefix(namespace)
        if index and (index.get("embed") is not None or index.get("dims") is not None):
            warnings.warn(
                "MuistiStore searches with the muisti server's embedder: index 'embed' and 'dims' are not used",
                stacklevel=2,
            )
        self.fields = list((index or {}).get("fields") or ["$"])
        self.ttl_config = ttl

    # Encoding
    @staticmethod
    def _key(namespace: tuple[str, ...], key: str) -> str:
        encoded = json.dumps([*namespace, key])
        if len(encoded) > MAX_KEY:
            raise ValueError(f"namespace and key are {len(encoded)} characters encoded; at most {MAX_KEY}")
        return encoded

    def _text(self, value: dict[str, Any], fields: Optional[list[str]]) -> str:
        parts: list[str] = []
        for path in fields or self.fields:
            if path == "$":
                parts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            else:
                parts.extend(str(x) for x in get_text_at_path(value, tokenize_path(path)))
        text = "\n".join(p for p in parts if p and p.strip())
        return text or json.dumps(value, ensure_ascii=False, sort_keys=True)

    @staticmethod
    def _item(memory: t.Memory, score: Optional[float] = None, search: bool = False) -> Union[Item, SearchItem]:
        meta = memory.metadata or {}
        namespace = tuple(meta["lg_namespace"])
        created = datetime.fromisoformat(memory.created_at.replace("Z", "+00:00"))
        updated = datetime.fromisoformat(memory.updated_at.replace("Z", "+00:00"))
        if search:
            return SearchItem(namespace, meta["lg_key"], meta["lg_value"], created, updated, score)
        return Item(value=meta["lg_value"], key=meta["lg_key"], namespace=namespace, created_at=created, updated_at=updated)

    @staticmethod
    def _is_item(memory: t.Memory) -> bool:
        meta = memory.metadata or {}
        return "lg_namespace" in meta and "lg_key" in meta and "lg_value" in meta

    def _ttl_seconds(self, ttl: Any) -> Optional[int]:
        minutes = ttl
        if minutes is None or not isinstance(minutes, (int, float)):
            minutes = (self.ttl_config or {}).get("default_ttl")
        return max(1, int(round(minutes * 60))) if minutes else None

    def _refresh(self, memory: t.Memory, refresh: Optional[bool]) -> None:
        meta = memory.metadata or {}
        if meta.get("lg_ttl_seconds") is None:
            return
        if refresh is None:
            refresh = (self.ttl_config or {}).get("refresh_on_read", True)
        if refresh:
            self.client.update(memory.id, ttl_seconds=meta["lg_ttl_seconds"])

    # Operations
    def _get(self, op: GetOp) -> Optional[Item]:
        try:
            entry = self.client.kv_get(self.namespace, self._key(op.namespace, op.key))
            memory = self.client.get(entry.id)
        except NotFoundError:
            return None
        if not self._is_item(memory):
            return None
        self._refresh(memory, op.refresh_ttl)
        return self._item(memory)

    def _put(self, op: PutOp) -> None:
        key = self._key(op.namespace, op.key)
        if op.value is None:
            try:
                self.client.kv_delete(self.namespace, key)
            except NotFoundError:
                pass
            return
        value = dict(op.value)
        ttl_seconds = self._ttl_seconds(op.ttl)
        tags = [_prefix_tag(op.namespace[:depth]) for depth in range(1, len(op.namespace) + 1)]
        if op.index is False:
            tags.append("lg:unindexed")
        self.client.remember(
            self._text(value, None if op.index in (None, False) else list(op.index)),
            namespace=self.namespace,
            key=key,
            tags=tags,
            metadata={"lg_namespace": list(op.namespace), "lg_key": op.key, "lg_value": value, "lg_ttl_seconds": ttl_seconds},
            ttl_seconds=ttl_seconds,
            source="langgraph",
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        tags = [_prefix_tag(op.namespace_prefix)] if op.namespace_prefix else None
        wanted = op.offset + op.limit
        found: list[tuple[t.Memory, Optional[float]]] = []
        if op.query:
            ask = wanted if not op.filter else MAX_RECALL
            hits = self.client.recall(
                op.query,
                namespace=self.namespace,
                limit=min(max(ask, 1), MAX_RECALL),
                filters={"tags": tags} if tags else None,
            )
            for hit in hits:
                memory = hit.memory
                if self._is_item(memory) and "lg:unindexed" not in (memory.tags or []):
                    found.append((memory, hit.score))
        else:
            for memory in self.client.iter_memories(namespace=self.namespace, tags=tags, limit=1000):
                if self._is_item(memory):
                    found.append((memory, None))
            found.sort(key=lambda pair: pair[0].updated_at, reverse=True)
        matched = [(m, s) for m, s in found if _matches(m.metadata["lg_value"], op.filter)]
        page = matched[op.offset: wanted]
        for memory, _ in page:
            self._refresh(memory, op.refresh_ttl)
        return [self._item(m, s, search=True) for m, s in page]  # type: ignore[misc]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for memory in self.client.iter_memories(namespace=self.namespace, limit=1000):
            if not self._is_item(memory):
                continue
            namespace = tuple(memory.metadata["lg_namespace"])
            if not _namespace_matches(namespace, op):
                continue
            if op.max_depth is not None:
                namespace = namespace[: op.max_depth]
            seen.add(namespace)
        return sorted(seen)[op.offset: op.offset + op.limit]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order (LangGraph's one entry point of a store)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` on a worker thread."""
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)
