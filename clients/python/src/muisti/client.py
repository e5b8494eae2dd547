"""`Client` (blocking) and `AsyncClient` (asyncio) for the muisti HTTP API.

Both are built from one table of operations (`_Operations`): each method describes its request
once (method, path, parameters, body, how to read the answer) and the client sends it, so the
two cannot differ in what they send. Errors are typed (`muisti.errors`); 429 and 503 answers
are retried with exponential back-off, honouring `Retry-After`.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypeVar, Union
from urllib.parse import quote

import httpx

from . import types as t
from .errors import ConnectionError, error_for

__all__ = ["AsyncClient", "Client", "StreamEvent"]

W = TypeVar("W", bound=t.Wire)

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
RETRY_STATUSES = frozenset({429, 503})
MAX_BACKOFF = 30.0


@dataclass
class StreamEvent:
    """One server-sent event of `chat_stream`: its name (`token`, `done`, `error`, ...) and data."""

    event: str
    data: Any


@dataclass
class _Request:
    method: str
    path: str
    params: Optional[dict[str, Any]] = None
    body: Any = None
    decode: Callable[[httpx.Response], Any] = lambda r: r.json() if r.content else None
    # Statuses answered without raising, decoded by `decode` (HEAD's 404).
    accept: frozenset[int] = frozenset()


def _segment(value: Any) -> str:
    """A path segment, percent-encoded (a key may hold `/` or spaces)."""
    return quote(str(value), safe="")


def _params(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        out[name] = value
    return out


def _model(kind: type[W], unwrap: Optional[str] = None) -> Callable[[httpx.Response], Any]:
    def decode(response: httpx.Response) -> Any:
        value = kind.from_wire(response.json())
        return getattr(value, unwrap) if unwrap else value

    return decode


def _nothing(_: httpx.Response) -> None:
    return None


def _text(response: httpx.Response) -> str:
    return response.text


def _exists(response: httpx.Response) -> bool:
    return response.status_code == 200


def _body(kind: type[W], value: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """A request body of `kind` from a value of it, a dict, or keyword fields (unknown names
    raise `TypeError` here, before anything is sent)."""
    if value is None:
        return kind(**fields).to_wire()  # type: ignore[call-arg]
    if fields:
        raise TypeError(f"pass either a {kind.__name__} or its fields, not both")
    if isinstance(value, dict):
        return kind.from_wire(value).to_wire()
    return value.to_wire()


def retry_delay(response: Optional[httpx.Response], attempt: int, base: float) -> float:
    """How long to wait before retry `attempt` (from 0): the server's `Retry-After` when it
    gives one, else exponential back-off with jitter."""
    if response is not None:
        after = _retry_after(response)
        if after is not None:
            return min(after, MAX_BACKOFF)
    return min(base * (2**attempt), MAX_BACKOFF) * (0.5 + random.random() / 2)


def _retry_after(response: httpx.Response) -> Optional[float]:
    header = response.headers.get("retry-after")
    if header is None:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        return None


def _retry(
    client: Any,
    attempt: int,
    *,
    response: Optional[httpx.Response] = None,
    error: Optional[httpx.TransportError] = None,
) -> Optional[float]:
    """The one retry rule of both clients: how long to wait before trying again, or `None`
    to take this answer. A failed connection or a 429/503 answer is retried until
    `max_retries`; past it a failed connection raises `ConnectionError` and an answer is
    taken (and raised typed by `_answer`)."""
    if error is not None:
        if attempt >= client.max_retries:
            raise ConnectionError(client.base_url, str(error) or type(error).__name__) from error
        return retry_delay(None, attempt, client.backoff)
    if response is not None and response.status_code in RETRY_STATUSES and attempt < client.max_retries:
        return retry_delay(response, attempt, client.backoff)
    return None


def _answer(request: _Request, response: httpx.Response) -> Any:
    _raise_for(request, response)
    return request.decode(response)


def _raise_for(request: _Request, response: httpx.Response) -> None:
    if response.status_code < 400 or response.status_code in request.accept:
        return
    try:
        body: Any = response.json()
    except (ValueError, UnicodeDecodeError):
        body = response.text
    raise error_for(response.status_code, body, _retry_after(response))


class _SseParser:
    """Server-sent events from lines, one event per blank line."""

    def __init__(self) -> None:
        self.event, self.data = "message", []

    def feed(self, line: str) -> Optional[StreamEvent]:
        if line == "":
            return self.finish()
        if line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip(" "))
        return None

    def finish(self) -> Optional[StreamEvent]:
        if not self.data:
            self.event = "message"
            return None
        text = "\n".join(self.data)
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = text
        event = StreamEvent(self.event, data)
        self.event, self.data = "message", []
        return event


class _Operations:
    """Every operation of the API, each described once. `_send` is the client's: blocking in
    `Client`, a coroutine in `AsyncClient`."""

    def _send(self, request: _Request) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    # Memories
    def remember(self, content: Any = None, *, memory: Union[t.NewMemory, dict, None] = None, **fields: Any) -> Any:
        """Stores a memory (`POST /v1/memories`) and returns it (`types.Memory`): `content`
        and any field of `types.NewMemory` (`user_id`, `tags`, `importance`, `key`, ...)."""
        if content is not None:
            fields["content"] = content
        return self._send(_Request("POST", "/v1/memories", body=_body(t.NewMemory, memory, fields), decode=_model(t.Memory)))

    def remember_many(self, memories: Sequence[Union[t.NewMemory, dict]]) -> Any:
        """Stores up to 1,000 memories in one transaction (all or none); returns them in order."""
        body = {"memories": [_body(t.NewMemory, m, {}) for m in memories]}
        return self._send(_Request("POST", "/v1/memories/batch", body=body, decode=_model(t.Memories, "memories")))

    def recall(self, query: str, *, limit: Optional[int] = None, user_id: Optional[str] = None, **fields: Any) -> Any:
        """The memories that best match `query` (`POST /v1/recall`), best first: a list of
        `types.RecallHit` (`.memory`, `.score`). Any field of `types.RecallQuery` (`namespace`,
        `session_id`, `filters`, `min_score`, `mode`, `explain`, ...) may be given."""
        body = t.RecallQuery(query=query, limit=limit, user_id=user_id, **fields).to_wire()
        return self._send(_Request("POST", "/v1/recall", body=body, decode=_model(t.RecallResult, "hits")))

    def get(self, id: str, *, user_id: Optional[str] = None) -> Any:
        """One memory by id (`types.Memory`); `NotFoundError` when there is none."""
        return self._send(_Request("GET", f"/v1/memories/{_segment(id)}", _params(user_id=user_id), decode=_model(t.Memory)))

    def update(self, id: str, patch: Union[t.MemoryPatch, dict, None] = None, **fields: Any) -> Any:
        """Changes some fields of a memory atomically (`types.MemoryPatch`; `expected_version`
        makes it conditional: `ConflictError` when the memory moved on)."""
        body = _body(t.MemoryPatch, patch, fields)
        return self._send(_Request("PATCH", f"/v1/memories/{_segment(id)}", body=body, decode=_model(t.Memory)))

    def forget(self, id: str, *, user_id: Optional[str] = None) -> Any:
        """Deletes a memory; `NotFoundError` when there is none."""
        return self._send(_Request("DELETE", f"/v1/memories/{_segment(id)}", _params(user_id=user_id), decode=_nothing))

    def forget_all(self, *, user_id: str, namespace: Optional[str] = None, agent_id: Optional[str] = None, session_id: Optional[str] = None) -> Any:
        """Deletes every memory of one user in a namespace (or only an agent's or a session's);
        returns how many."""
        params = _params(user_id=user_id, namespace=namespace, agent_id=agent_id, session_id=session_id)
        return self._send(_Request("DELETE", "/v1/memories", params, decode=_model(t.Deleted, "deleted")))

    def list(
        self,
        *,
        namespace: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        category: Optional[str] = None,
        scope: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        state: Optional[str] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        order: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Any:
        """One page of memories (`types.MemoryPage`: `items`, `next_cursor`), oldest first or
        in `order`: `newest`, `importance` (most important, then most recently accessed) or
        `accessed` (most recently accessed first)."""
        params = _params(
            namespace=namespace, user_id=user_id, agent_id=agent_id, session_id=session_id,
            category=category, scope=scope, tag=list(tags) if tags else None, state=state,
            created_after=created_after, created_before=created_before, order=order,
            cursor=cursor, limit=limit,
        )
        return self._send(_Request("GET", "/v1/memories", params, decode=_model(t.MemoryPage)))

    def history(self, id: str, *, user_id: Optional[str] = None) -> Any:
        """A memory's history (add, update, supersede, confirm, ...)."""
        return self._send(_Request("GET", f"/v1/memories/{_segment(id)}/history", _params(user_id=user_id), decode=_model(t.History)))

    def accesses(self, id: str, *, user_id: Optional[str] = None) -> Any:
        """A memory's accesses in the server's access log (each day's count, then the
        latest accesses, newest first); empty while the server's log is off."""
        return self._send(_Request("GET", f"/v1/memories/{_segment(id)}/accesses", _params(user_id=user_id), decode=_model(t.MemoryAccesses)))

    def restore(self, id: str) -> Any:
        """Brings an archived memory back from the archive."""
        return self._send(_Request("POST", f"/v1/memories/{_segment(id)}/restore", decode=_model(t.Memory)))

    def similar(self, id: str, *, limit: Optional[int] = None, namespace: Optional[str] = None, user_id: Optional[str] = None, all_users: Optional[bool] = None) -> Any:
        """The memories closest in meaning to one memory (itself excluded): a list of hits,
        the memory's own user's (`user_id`: the acting user's; `all_users`: everyone's)."""
        params = _params(limit=limit, namespace=namespace, user_id=user_id, all_users=all_users)
        return self._send(_Request("GET", f"/v1/memories/{_segment(id)}/similar", params, decode=_model(t.RecallResult, "hits")))

    def extract(self, messages: Sequence[Union[t.ExtractMessage, dict]], **fields: Any) -> Any:
        """Remembers a conversation (mem0's `add(messages)`): the facts found in it
        (`infer=True`, the default) or each message as said (`infer=False`)."""
        fields["messages"] = [_body(t.ExtractMessage, m, {}) for m in messages]
        body = _body(t.ExtractRequest, None, fields)
        return self._send(_Request("POST", "/v1/memories/extract", body=body))

    # Key-value state
    def kv_set(self, namespace: str, key: str, value: Any, *, ttl_seconds: Optional[int] = None) -> Any:
        """Stores a JSON value at a key, replacing any value there (`types.KvEntry`)."""
        body = t.KvValue(value=value, ttl_seconds=ttl_seconds).to_wire()
        return self._send(_Request("PUT", f"/v1/kv/{_segment(namespace)}/{_segment(key)}", body=body, decode=_model(t.KvEntry)))

    def kv_get(self, namespace: str, key: str) -> Any:
        """The entry at a key (`types.KvEntry`, `.value`); `NotFoundError` when there is none."""
        return self._send(_Request("GET", f"/v1/kv/{_segment(namespace)}/{_segment(key)}", decode=_model(t.KvEntry)))

    def kv_has(self, namespace: str, key: str) -> Any:
        """Whether a key holds a value."""
        return self._send(_Request("HEAD", f"/v1/kv/{_segment(namespace)}/{_segment(key)}", decode=_exists, accept=frozenset({404})))

    def kv_delete(self, namespace: str, key: str) -> Any:
        """Deletes a key; `NotFoundError` when there is none."""
        return self._send(_Request("DELETE", f"/v1/kv/{_segment(namespace)}/{_segment(key)}", decode=_nothing))

    def kv_list(self, namespace: str, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> Any:
        """One page of a namespace's entries, oldest first (`types.KvEntries`: `entries` by
        key, `next_cursor`)."""
        params = _params(cursor=cursor, limit=limit)
        return self._send(_Request("GET", f"/v1/kv/{_segment(namespace)}", params, decode=_model(t.KvEntries)))

    def kv_flush(self, namespace: str) -> Any:
        """Deletes every entry of a namespace; returns how many."""
        return self._send(_Request("DELETE", f"/v1/kv/{_segment(namespace)}", decode=_model(t.Deleted, "deleted")))

    # Conversations and chat
    def conversations(self, *, user_id: Optional[str] = None) -> Any:
        """The conversations, oldest first (`types.ConversationSummary` each)."""
        return self._send(_Request("GET", "/v1/conversations", _params(user_id=user_id), decode=_model(t.Conversations, "conversations")))

    def conversation(self, id: str) -> Any:
        """A conversation with its messages (`types.ConversationDetail`)."""
        return self._send(_Request("GET", f"/v1/conversations/{_segment(id)}", decode=_model(t.ConversationDetail)))

    def append_messages(self, id: str, messages: Sequence[Union[t.NewMessage, dict]], **fields: Any) -> Any:
        """Appends messages to a conversation (made on first use; `user_id`, `agent_id`);
        returns the stored messages (`types.ConversationMessage`, with their `seq`)."""
        fields["messages"] = [_body(t.NewMessage, m, {}) for m in messages]
        body = _body(t.AppendMessages, None, fields)
        return self._send(_Request("POST", f"/v1/conversations/{_segment(id)}/messages", body=body, decode=_model(t.AppendedMessages, "items")))

    def pop_message(self, id: str) -> Any:
        """Takes back a conversation's last message and returns it
        (`types.ConversationMessage`); `NotFoundError` when it has none."""
        return self._send(_Request("DELETE", f"/v1/conversations/{_segment(id)}/messages/last", decode=_model(t.ConversationMessage)))

    def delete_conversation(self, id: str) -> Any:
        """Deletes a conversation; returns how many records went."""
        return self._send(_Request("DELETE", f"/v1/conversations/{_segment(id)}", decode=_model(t.Deleted, "deleted")))

    def end_conversation(self, id: str) -> Any:
        """Ends a conversation (its scratch and short-term memories go); returns how many."""
        return self._send(_Request("POST", f"/v1/conversations/{_segment(id)}/end", decode=_model(t.Deleted, "deleted")))

    def chat(self, message: str, **fields: Any) -> Any:
        """Sends a message to the server's agent (`types.ChatReply`)."""
        body = t.ChatMessage(message=message, **fields).to_wire()
        return self._send(_Request("POST", "/v1/chat", body=body, decode=_model(t.ChatReply)))

    def chat_completions(self, messages: Sequence[dict], **fields: Any) -> Any:
        """OpenAI-format chat completions with memory (the answer as a dict; for streaming use
        the OpenAI SDK with `base_url=<server>/v1`)."""
        body = t.ChatCompletionRequest(messages=list(messages), **fields).to_wire()
        body.pop("stream", None)
        return self._send(_Request("POST", "/v1/chat/completions", body=body))

    # Declarative memory
    def proposals(self, *, user_id: Optional[str] = None) -> Any:
        """The proposals waiting for a user's confirmation, oldest first."""
        return self._send(_Request("GET", "/v1/proposals", _params(user_id=user_id), decode=_model(t.Proposals, "proposals")))

    def confirm_proposal(self, id: str, *, user_id: str) -> Any:
        """Applies a proposal of `user_id`'s (only the user it concerns decides it); returns
        the memory it wrote."""
        body = t.ProposalDecision(user_id=user_id).to_wire()
        return self._send(_Request("POST", f"/v1/proposals/{_segment(id)}/confirm", body=body, decode=_model(t.Memory)))

    def reject_proposal(self, id: str, *, user_id: str) -> Any:
        """Drops a proposal of `user_id`'s; returns it."""
        body = t.ProposalDecision(user_id=user_id).to_wire()
        return self._send(_Request("POST", f"/v1/proposals/{_segment(id)}/reject", body=body, decode=_model(t.Proposal)))

    def manage(self, command: str, **fields: Any) -> Any:
        """Carries out a natural-language command over the user's memory (`types.ManageReply`)."""
        body = _body(t.ManageRequest, None, {"command": command, **fields})
        return self._send(_Request("POST", "/v1/manage", body=body, decode=_model(t.ManageReply)))

    # Knowledge graph
    def entities(self, *, user_id: Optional[str] = None, kind: Optional[str] = None, name: Optional[str] = None, limit: Optional[int] = None) -> Any:
        """A user's entities (`types.GraphEntities`)."""
        params = _params(user_id=user_id, type=kind, name=name, limit=limit)
        return self._send(_Request("GET", "/v1/graph/entities", params, decode=_model(t.GraphEntities)))

    def relations(
        self,
        *,
        user_id: Optional[str] = None,
        subject: Optional[str] = None,
        predicate: Optional[str] = None,
        object: Optional[str] = None,  # noqa: A002 - the wire's name
        entity: Optional[str] = None,
        hops: Optional[int] = None,
        as_of: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Any:
        """The relations matching a triple pattern, or around an entity (`types.GraphRelations`)."""
        params = _params(user_id=user_id, subject=subject, predicate=predicate, object=object, entity=entity, hops=hops, as_of=as_of, limit=limit)
        return self._send(_Request("GET", "/v1/graph/relations", params, decode=_model(t.GraphRelations)))

    def merge_entities(self, keep: str, other: str, **fields: Any) -> Any:
        """Merges the entity `other` into `keep` (two names of one thing)."""
        body = _body(t.GraphMerge, None, {"keep": keep, "other": other, **fields})
        return self._send(_Request("POST", "/v1/graph/entities/merge", body=body, decode=_model(t.GraphEntity)))

    # Analytics and clusters
    def analytics(self, **params: Any) -> Any:
        """Aggregates of a namespace's memories (`types.Analytics`)."""
        return self._send(_Request("GET", "/v1/analytics", _params(**params), decode=_model(t.Analytics)))

    def similarity(self, **params: Any) -> Any:
        """How alike a page of a user's memories are (`types.Similarity`)."""
        return self._send(_Request("GET", "/v1/analytics/similarity", _params(**params), decode=_model(t.Similarity)))

    def clusters(self, *, user_id: Optional[str] = None, namespace: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> Any:
        """A user's memories grouped by topic (`types.Clusters`)."""
        params = _params(user_id=user_id, namespace=namespace, limit=limit, cursor=cursor)
        return self._send(_Request("GET", "/v1/clusters", params, decode=_model(t.Clusters)))

    def cluster_memories(self, cluster: int, *, user_id: Optional[str] = None, namespace: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> Any:
        """One page of a cluster's memories (`types.MemoryPage`)."""
        params = _params(user_id=user_id, namespace=namespace, limit=limit, cursor=cursor)
        return self._send(_Request("GET", f"/v1/clusters/{_segment(cluster)}/memories", params, decode=_model(t.MemoryPage)))

    # Operations
    def health(self) -> Any:
        """Liveness (`types.Health`)."""
        return self._send(_Request("GET", "/healthz", decode=_model(t.Health)))

    def ready(self) -> Any:
        """Readiness: whether the store answers (`types.Health`)."""
        return self._send(_Request("GET", "/readyz", decode=_model(t.Health)))

    def metrics(self) -> Any:
        """Prometheus metrics, as text."""
        return self._send(_Request("GET", "/metrics", decode=_text))

    def stats(self, *, namespace: Optional[str] = None, user_id: Optional[str] = None) -> Any:
        """What the caller's tenant holds (`types.Stats`); with a namespace or user, their
        memories summed up in `summary` (average importance, average and highest access
        count, how many expire)."""
        params = _params(namespace=namespace, user_id=user_id)
        return self._send(_Request("GET", "/v1/stats", params, decode=_model(t.Stats)))

    def jobs(self) -> Any:
        """The server's background jobs, newest first."""
        return self._send(_Request("GET", "/v1/jobs", decode=_model(t.Jobs, "items")))

    def job(self, id: str) -> Any:
        """A background job's progress (`types.Job`)."""
        return self._send(_Request("GET", f"/v1/jobs/{_segment(id)}", decode=_model(t.Job)))

    def reindex(self, **fields: Any) -> Any:
        """Starts re-embedding memories in the background (admin key); returns the job."""
        body = _body(t.ReindexRequest, None, fields)
        return self._send(_Request("POST", "/v1/reindex", body=body, decode=_model(t.Job)))

    def maintain(self) -> Any:
        """Runs the scopes' lifetimes now (admin key)."""
        return self._send(_Request("POST", "/v1/maintain", decode=_model(t.Maintained)))

    def maintenance(self, **fields: Any) -> Any:
        """Runs maintenance now (operator key): the report, or the job when run in the background."""
        body = _body(t.MaintenanceRequest, None, fields)
        return self._send(_Request("POST", "/v1/maintenance", body=body))

    def purge(self) -> Any:
        """Deletes expired records now, in the whole store (admin key)."""
        return self._send(_Request("POST", "/v1/purge", decode=_model(t.Purged)))

    # Administration
    def list_keys(self) -> Any:
        """Every API key (never the secrets)."""
        return self._send(_Request("GET", "/v1/admin/keys", decode=_model(t.KeyList, "keys")))

    def create_key(self, tenant: str, **fields: Any) -> Any:
        """Makes an API key (`types.CreatedKey`; the secret `key` is in this answer only)."""
        body = _body(t.NewKey, None, {"tenant": tenant, **fields})
        return self._send(_Request("POST", "/v1/admin/keys", body=body, decode=_model(t.CreatedKey)))

    def revoke_key(self, id: str) -> Any:
        """Revokes an API key."""
        return self._send(_Request("DELETE", f"/v1/admin/keys/{_segment(id)}", decode=_nothing))

    def snapshots(self) -> Any:
        """The snapshots of the whole store, oldest first (operator key)."""
        return self._send(_Request("GET", "/v1/admin/snapshots", decode=_model(t.SnapshotList, "snapshots")))

    def create_snapshot(self) -> Any:
        """Snapshots the whole store now (operator key)."""
        return self._send(_Request("POST", "/v1/admin/snapshots", decode=_model(t.Snapshot)))

    def restore_snapshot(self, id: str) -> Any:
        """Replaces everything in the store with a snapshot's records (operator key)."""
        return self._send(_Request("POST", f"/v1/admin/snapshots/{_segment(id)}/restore", decode=_model(t.Restored)))

    def request(self, method: str, path: str, *, params: Optional[dict[str, Any]] = None, json: Any = None) -> Any:
        """Any request, answered as JSON (errors typed like every other call)."""
        return self._send(_Request(method.upper(), path, _params(**(params or {})), json))


# Each method of the client and the OpenAPI operation it calls (`tests/test_wire.py` checks
# that every operation of docs/openapi.json is here).
OPERATIONS: dict[str, str] = {
    "remember": "create_memory", "remember_many": "create_memories", "recall": "recall",
    "get": "get_memory", "update": "update_memory", "forget": "delete_memory",
    "forget_all": "delete_memories", "list": "list_memories", "history": "memory_history",
    "accesses": "memory_accesses",
    "restore": "restore_memory", "similar": "similar", "extract": "extract_memories",
    "kv_set": "kv_set", "kv_get": "kv_get", "kv_has": "kv_has", "kv_delete": "kv_forget",
    "kv_list": "kv_all", "kv_flush": "kv_flush", "conversations": "list_conversations",
    "conversation": "get_conversation", "append_messages": "append_messages", "pop_message": "pop_message",
    "delete_conversation": "delete_conversation",
    "end_conversation": "end_conversation", "chat": "chat", "chat_stream": "chat_stream",
    "chat_completions": "chat_completions", "proposals": "list_proposals",
    "confirm_proposal": "confirm_proposal", "reject_proposal": "reject_proposal",
    "manage": "manage", "entities": "graph_entities", "relations": "graph_relations",
    "merge_entities": "graph_merge", "analytics": "analytics", "similarity": "similarity",
    "clusters": "clusters", "cluster_memories": "cluster_memories", "health": "healthz",
    "ready": "readyz", "metrics": "metrics", "stats": "stats", "jobs": "jobs", "job": "job",
    "reindex": "reindex", "maintain": "maintain", "maintenance": "maintenance", "purge": "purge",
    "list_keys": "list_keys", "create_key": "create_key", "revoke_key": "revoke_key",
    "snapshots": "list_snapshots", "create_snapshot": "create_snapshot",
    "restore_snapshot": "restore_snapshot",
}


def _headers(api_key: Optional[str]) -> dict[str, str]:
    from . import __version__

    headers = {"user-agent": f"muisti-python/{__version__}", "accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


class Client(_Operations):
    """A blocking client: `Client("http://127.0.0.1:7878", api_key=...)`.

    Connections are pooled; use it as a context manager or call `close()`. 429 and 503 answers
    and failed connections are retried up to `max_retries` times, waiting `Retry-After` when
    the server says, else an exponential back-off from `backoff` seconds.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:7878",
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff = backoff
        self._http = http_client or httpx.Client(base_url=self.base_url, timeout=timeout, headers=_headers(api_key))

    def close(self) -> None:
        """Closes the pooled connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: _Request) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(request.method, request.path, params=request.params, json=request.body)
            except httpx.TransportError as e:
                wait = _retry(self, attempt, error=e)
            else:
                wait = _retry(self, attempt, response=response)
                if wait is None:
                    return _answer(request, response)
            time.sleep(wait)
            attempt += 1

    def iter_memories(self, **filters: Any) -> Iterator[t.Memory]:
        """Every memory matching `filters` (those of `list`), page by page, oldest first."""
        cursor = None
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def kv_items(self, namespace: str) -> Iterator[tuple[str, Any]]:
        """Every `(key, value)` of a namespace, page by page, oldest first."""
        cursor = None
        while True:
            page = self.kv_list(namespace, cursor=cursor)
            yield from page.entries.items()
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def chat_stream(self, message: str, **fields: Any) -> Iterator[StreamEvent]:
        """`chat` with the answer streamed: server-sent events as they come."""
        body = t.ChatMessage(message=message, **fields).to_wire()
        request = _Request("POST", "/v1/chat/stream", body=body)
        try:
            with self._http.stream("POST", request.path, json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for(request, response)
                parser = _SseParser()
                for line in response.iter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        yield event
                event = parser.finish()
                if event is not None:
                    yield event
        except httpx.TransportError as e:
            raise ConnectionError(self.base_url, str(e) or type(e).__name__) from e


class AsyncClient(_Operations):
    """The asyncio client: the same methods as `Client`, each a coroutine."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:7878",
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff = backoff
        self._http = http_client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=_headers(api_key))

    async def aclose(self) -> None:
        """Closes the pooled connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, request: _Request) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(request.method, request.path, params=request.params, json=request.body)
            except httpx.TransportError as e:
                wait = _retry(self, attempt, error=e)
            else:
                wait = _retry(self, attempt, response=response)
                if wait is None:
                    return _answer(request, response)
            await asyncio.sleep(wait)
            attempt += 1

    async def iter_memories(self, **filters: Any) -> AsyncIterator[t.Memory]:
        """Every memory matching `filters` (those of `list`), page by page, oldest first."""
        cursor = None
        while True:
            page = await self.list(cursor=cursor, **filters)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def kv_items(self, namespace: str) -> AsyncIterator[tuple[str, Any]]:
        """Every `(key, value)` of a namespace, page by page, oldest first."""
        cursor = None
        while True:
            page = await self.kv_list(namespace, cursor=cursor)
            for item in page.entries.items():
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def chat_stream(self, message: str, **fields: Any) -> AsyncIterator[StreamEvent]:
        """`chat` with the answer streamed: server-sent events as they come."""
        body = t.ChatMessage(message=message, **fields).to_wire()
        request = _Request("POST", "/v1/chat/stream", body=body)
        try:
            async with self._http.stream("POST", request.path, json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _raise_for(request, response)
                parser = _SseParser()
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        yield event
                event = parser.finish()
                if event is not None:
                    yield event
        except httpx.TransportError as e:
            raise ConnectionError(self.base_url, str(e) or type(e).__name__) from e
