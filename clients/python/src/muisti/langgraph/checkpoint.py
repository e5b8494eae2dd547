"""`MuistiSaver`: LangGraph's checkpointer (`BaseCheckpointSaver`) over a muisti server.

Checkpoints live in the server's key-value store, so they sit in whatever store the server
runs on (SQLite, PostgreSQL, Redis, ...) and under the caller's tenant, in namespaces of
application state (`_state.`, by default `_state.langgraph.cp`): the server's statistics and
dashboard count them apart, not as memories. Per thread:

- `{prefix}.i.{thread}`: one small entry per checkpoint (its namespace, id, parent and
  metadata), what `list` and `get_tuple` read;
- `{prefix}.b.{thread}`: the checkpoints themselves, one entry each;
- `{prefix}.w.{thread}.{checkpoint}`: the pending writes of one checkpoint;
- `{prefix}.threads`: every thread, for `list(None)`, `delete_for_runs` and `prune`.

(`{thread}` and `{checkpoint}` are digests of the ids, so any thread id fits a namespace
name.) Values are serialised by the saver's `serde` (LangGraph's typed serialiser) and
base64-encoded, so whatever LangGraph can checkpoint round-trips. A checkpoint is written
before its index entry, so a reader never finds an entry without its checkpoint. One
checkpoint must fit the server's request body limit (1 MiB by default, `body_limit_bytes`).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Optional

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from ..client import Client
from ..errors import NotFoundError
from ._names import check_prefix, digest

__all__ = ["MuistiSaver"]


class MuistiSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing its checkpoints on a muisti server.

    ```python
    from muisti import Client
    from muisti.langgraph import MuistiSaver

    graph = builder.compile(checkpointer=MuistiSaver(Client("http://127.0.0.1:7878")))
    ```

    `namespace` is the prefix of the key-value namespaces it writes (default
    `_state.langgraph.cp`; checkpoints an earlier version wrote under `langgraph.cp` are read
    with `namespace="langgraph.cp"`, where they count as memories).
    The async methods run the blocking client on a worker thread.
    """

    def __init__(
        self,
        client: Client,
        *,
        namespace: str = "_state.langgraph.cp",
        serde: Optional[SerializerProtocol] = None,
    ) -> None:
        super().__init__(serde=serde)
        self.client = client
        self.prefix = check_prefix(namespace)

    # Names
    def _threads(self) -> str:
        return f"{self.prefix}.threads"

    def _index(self, thread_id: str) -> str:
        return f"{self.prefix}.i.{digest(thread_id)}"

    def _blobs(self, thread_id: str) -> str:
        return f"{self.prefix}.b.{digest(thread_id)}"

    def _writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
        return f"{self.prefix}.w.{digest(thread_id)}.{digest(checkpoint_ns, checkpoint_id)}"

    @staticmethod
    def _key(checkpoint_ns: str, checkpoint_id: str) -> str:
        return json.dumps([checkpoint_ns, checkpoint_id])

    # Values
    def _dump(self, value: Any) -> dict[str, str]:
        kind, data = self.serde.dumps_typed(value)
        return {"type": kind, "data": base64.b64encode(data).decode("ascii")}

    def _load(self, value: dict[str, str]) -> Any:
        return self.serde.loads_typed((value["type"], base64.b64decode(value["data"])))

    # Reading
    def _entries(self, thread_id: str) -> list[dict[str, Any]]:
        """The index entries of a thread (every namespace), newest first."""
        entries = [value for _, value in self.client.kv_items(self._index(thread_id))]
        entries.sort(key=lambda e: e["checkpoint_id"], reverse=True)
        return entries

    def _pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[str, str, Any]]:
        writes = [w for _, w in self.client.kv_items(self._writes(thread_id, checkpoint_ns, checkpoint_id))]
        writes.sort(key=lambda w: writes_sort_key(w["task_path"], w["task_id"], w["idx"]))
        return [(w["task_id"], w["channel"], self._load(w["value"])) for w in writes]

    def _tuple(self, entry: dict[str, Any], metadata: Optional[CheckpointMetadata] = None) -> Optional[CheckpointTuple]:
        """The tuple of an index entry (`metadata`: already decoded, when the caller has it)."""
        thread_id, ns, cid = entry["thread_id"], entry["checkpoint_ns"], entry["checkpoint_id"]
        try:
            blob = self.client.kv_get(self._blobs(thread_id), self._key(ns, cid)).value
        except NotFoundError:
            return None  # deleted between the listing and this read
        parent = entry.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}},
            checkpoint=self._load(blob),
            metadata=metadata if metadata is not None else self._load(entry["metadata"]),
            parent_config=(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
                if parent
                else None
            ),
            pending_writes=self._pending_writes(thread_id, ns, cid),
        )

    def get_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        """The checkpoint the config names, or the thread's latest in its namespace."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        wanted = get_checkpoint_id(config)
        if wanted:
            try:
                entry = self.client.kv_get(self._index(thread_id), self._key(ns, wanted)).value
            except NotFoundError:
                return None
            return self._tuple(entry)
        for entry in self._entries(thread_id):
            if entry["checkpoint_ns"] == ns:
                return self._tuple(entry)
        return None

    def list(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,  # noqa: A002 - LangGraph's name
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of one thread (every namespace unless the config names
        one) or of every thread (`config=None`), whose metadata has every `filter` field,
        older than `before`, at most `limit`."""
        if config is not None:
            threads = [config["configurable"]["thread_id"]]
            ns = config["configurable"].get("checkpoint_ns")
            only_id = get_checkpoint_id(config)
        else:
            threads = [value["thread_id"] for _, value in self.client.kv_items(self._threads())]
            ns, only_id = None, None
        before_id = get_checkpoint_id(before) if before else None
        if limit is not None and limit <= 0:
            return
        count = 0
        for thread_id in threads:
            for entry in self._entries(thread_id):
                if ns is not None and entry["checkpoint_ns"] != ns:
                    continue
                if only_id and entry["checkpoint_id"] != only_id:
                    continue
                if before_id and entry["checkpoint_id"] >= before_id:
                    continue
                metadata = None
                if filter:
                    metadata = self._load(entry["metadata"])
                    if not all(k in metadata and metadata[k] == v for k, v in filter.items()):
                        continue
                found = self._tuple(entry, metadata)
                if found is None:
                    continue
                yield found
                count += 1
                if limit is not None and count >= limit:
                    return

    # Writing
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Stores a checkpoint; returns the config that names it."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        cid = checkpoint["id"]
        key = self._key(ns, cid)
        self.client.kv_set(self._threads(), digest(thread_id), {"thread_id": thread_id})
        self.client.kv_set(self._blobs(thread_id), key, self._dump(checkpoint))
        entry = {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": cid,
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id"),
            "metadata": self._dump(get_checkpoint_metadata(config, metadata)),
        }
        self.client.kv_set(self._index(thread_id), key, entry)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Stores a task's writes for a checkpoint. A write at a regular index is kept once
        (the first one stored wins, so a retried task does not duplicate it); the special
        channels (errors, interrupts, ...) are replaced."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        cid = config["configurable"]["checkpoint_id"]
        where = self._writes(thread_id, ns, cid)
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            key = json.dumps([task_id, idx])
            if idx >= 0 and self.client.kv_has(where, key):
                continue
            record = {
                "task_id": task_id,
                "task_path": task_path,
                "idx": idx,
                "channel": channel,
                "value": self._dump(value),
            }
            self.client.kv_set(where, key, record)

    # Deleting and copying
    def _drop(self, thread_id: str, entries: list[dict[str, Any]]) -> None:
        """Deletes checkpoints of a thread: index entry first, then checkpoint and writes."""
        for entry in entries:
            ns, cid = entry["checkpoint_ns"], entry["checkpoint_id"]
            key = self._key(ns, cid)
            for where in (self._index(thread_id), self._blobs(thread_id)):
                try:
                    self.client.kv_delete(where, key)
                except NotFoundError:
                    pass
            self.client.kv_flush(self._writes(thread_id, ns, cid))

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint and write of a thread."""
        entries = self._entries(thread_id)
        self.client.kv_flush(self._index(thread_id))
        self.client.kv_flush(self._blobs(thread_id))
        for entry in entries:
            self.client.kv_flush(self._writes(thread_id, entry["checkpoint_ns"], entry["checkpoint_id"]))
        try:
            self.client.kv_delete(self._threads(), digest(thread_id))
        except NotFoundError:
            pass

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Deletes the checkpoints (and their writes) whose metadata `run_id` is one of these."""
        runs = set(run_ids)
        if not runs:
            return
        for _, thread in list(self.client.kv_items(self._threads())):
            thread_id = thread["thread_id"]
            doomed = [e for e in self._entries(thread_id) if self._load(e["metadata"]).get("run_id") in runs]
            self._drop(thread_id, doomed)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies every checkpoint and write of a thread to another thread id."""
        entries = self._entries(source_thread_id)
        if not entries:
            return
        self.client.kv_set(self._threads(), digest(target_thread_id), {"thread_id": target_thread_id})
        for entry in reversed(entries):
            ns, cid = entry["checkpoint_ns"], entry["checkpoint_id"]
            key = self._key(ns, cid)
            try:
                blob = self.client.kv_get(self._blobs(source_thread_id), key).value
            except NotFoundError:
                continue
            self.client.kv_set(self._blobs(target_thread_id), key, blob)
            target = self._writes(target_thread_id, ns, cid)
            for wkey, write in self.client.kv_items(self._writes(source_thread_id, ns, cid)):
                self.client.kv_set(target, wkey, write)
            self.client.kv_set(self._index(target_thread_id), key, {**entry, "thread_id": target_thread_id})

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: only the newest checkpoint of each namespace of each thread stays;
        `delete`: the threads go."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"prune strategy {strategy!r}: keep_latest or delete")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            seen: set[str] = set()
            doomed = []
            for entry in self._entries(thread_id):
                if entry["checkpoint_ns"] in seen:
                    doomed.append(entry)
                seen.add(entry["checkpoint_ns"])
            self._drop(thread_id, doomed)

    # Async: the blocking client on a worker thread
    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,  # noqa: A002
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
