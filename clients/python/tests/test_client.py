"""The clients against a real `muisti serve`."""

from __future__ import annotations

import time
import uuid

import pytest
from conftest import need_binary, start, stop

from muisti import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    NotFoundError,
    ValidationError,
    types,
)


def user() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


def test_remember_then_recall_finds_it_first(server):
    with Client(server.url) as c:
        who = user()
        stored = c.remember("The boat is moored at pier 9", user_id=who, tags=["boat"])
        c.remember("Prefers tea over coffee in the morning", user_id=who)
        assert isinstance(stored, types.Memory)
        assert stored.user_id == who and stored.tags == ["boat"]
        hits = c.recall("where is the boat", user_id=who, limit=3)
        assert hits, "recall found nothing"
        assert hits[0].memory.id == stored.id
        assert "pier 9" in hits[0].memory.content
        assert 0 < hits[0].score <= 1
        # Another user's memory is not recalled.
        assert c.recall("where is the boat", user_id=user(), limit=3) == []


def test_get_update_forget_and_their_typed_errors(server):
    with Client(server.url) as c:
        who = user()
        m = c.remember("Lives in Lisbon", user_id=who, importance=0.4)
        assert c.get(m.id).content == "Lives in Lisbon"
        changed = c.update(m.id, content="Lives in Porto", expected_version=m.version)
        assert changed.content == "Lives in Porto" and changed.version > m.version
        with pytest.raises(ConflictError) as stale:
            c.update(m.id, content="Lives in Faro", expected_version=m.version)
        assert stale.value.status == 409 and stale.value.code == "conflict"
        assert c.get(m.id).content == "Lives in Porto"
        c.forget(m.id)
        with pytest.raises(NotFoundError) as gone:
            c.get(m.id)
        assert gone.value.status == 404 and gone.value.code == "not_found"


def test_bad_input_is_a_validation_error_naming_the_field(server):
    with Client(server.url) as c:
        with pytest.raises(ValidationError) as bad:
            c.remember("x", user_id=user(), importance=2.0)
        assert bad.value.status == 422
        assert "importance" in bad.value.message
        with pytest.raises(TypeError):
            c.remember("x", no_such_field=1)  # refused before sending


def test_many_memories_page_by_page(server):
    with Client(server.url) as c:
        who = user()
        stored = c.remember_many([{"content": f"fact number {i}", "user_id": who} for i in range(25)])
        assert [m.content for m in stored] == [f"fact number {i}" for i in range(25)]
        page = c.list(user_id=who, limit=10)
        assert len(page.items) == 10 and page.next_cursor
        every = list(c.iter_memories(user_id=who, limit=10))
        assert [m.id for m in every] == [m.id for m in stored]
        assert c.forget_all(user_id=who) == 25
        assert c.list(user_id=who).items == []


def test_key_value_state(server):
    with Client(server.url) as c:
        ns = f"state-{uuid.uuid4().hex[:8]}"
        entry = c.kv_set(ns, "theme/main colour", {"dark": True})
        assert entry.key == "theme/main colour" and entry.value == {"dark": True}
        assert c.kv_get(ns, "theme/main colour").value == {"dark": True}
        assert c.kv_has(ns, "theme/main colour") is True
        assert c.kv_has(ns, "missing") is False
        for i in range(5):
            c.kv_set(ns, f"k{i}", i)
        assert dict(c.kv_items(ns)) == {"theme/main colour": {"dark": True}, **{f"k{i}": i for i in range(5)}}
        c.kv_delete(ns, "k0")
        with pytest.raises(NotFoundError):
            c.kv_get(ns, "k0")
        assert c.kv_flush(ns) == 5
        assert dict(c.kv_items(ns)) == {}


def test_stats_and_health(server):
    with Client(server.url) as c:
        assert c.health().status == "ok"
        assert c.stats().backend == "sqlite"
        assert "muisti" in c.metrics()


async def test_the_async_client_does_the_same(server):
    async with AsyncClient(server.url) as c:
        who = user()
        stored = await c.remember("Allergic to peanuts", user_id=who)
        hits = await c.recall("what is she allergic to", user_id=who, limit=2)
        assert hits[0].memory.id == stored.id
        seen = [m.id async for m in c.iter_memories(user_id=who)]
        assert seen == [stored.id]
        with pytest.raises(NotFoundError):
            await c.get("01JZZZZZZZZZZZZZZZZZZZZZZZ")


def test_a_keyed_server_refuses_a_missing_key_and_takes_the_right_one(keyed_server):
    with Client(keyed_server.url) as anonymous:
        with pytest.raises(AuthenticationError) as refused:
            anonymous.stats()
        assert refused.value.status == 401
    with Client(keyed_server.url, api_key=keyed_server.api_key) as c:
        assert c.stats().tenant == "acme"
        keys = c.list_keys()
        assert [k.tenant for k in keys] == ["acme"]


def test_a_memorys_accesses_from_a_server_that_keeps_the_access_log(tmp_path):
    srv, process = start(need_binary(), tmp_path, ["--access-log", "queries"])
    try:
        with Client(srv.url) as c:
            who = user()
            m = c.remember("The spare key is under the blue pot", user_id=who)
            hits = c.recall("where is the spare key", user_id=who)
            assert hits[0].memory.id == m.id
            deadline = time.monotonic() + 30
            while not (a := c.accesses(m.id, user_id=who)).accesses:
                assert time.monotonic() < deadline, "the recall never reached the log"
                time.sleep(0.1)
            assert isinstance(a, types.MemoryAccesses)
            assert a.accesses[0].kind == "recall"
            assert a.accesses[0].query == "where is the spare key"
            assert a.days[0].count == 1
            with pytest.raises(NotFoundError):
                c.accesses(m.id, user_id=user())
    finally:
        stop(process)
