"""`MuistiStore` (LangGraph's `BaseStore`) against a real server."""

from __future__ import annotations

import time
import uuid

import pytest
from langgraph.store.base import Item, SearchItem

from muisti import Client
from muisti.langgraph import MuistiStore


@pytest.fixture
def store(server):
    return MuistiStore(Client(server.url), namespace=f"lgs{uuid.uuid4().hex[:8]}", index={"fields": ["text"]})


def test_put_get_overwrite_delete(store):
    ns = ("users", "alice")
    assert store.get(ns, "seat") is None
    store.put(ns, "seat", {"text": "prefers the window seat", "rank": 1})
    item = store.get(ns, "seat")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (ns, "seat", {"text": "prefers the window seat", "rank": 1})
    created = item.created_at
    store.put(ns, "seat", {"text": "prefers the aisle seat", "rank": 2})
    again = store.get(ns, "seat")
    assert again.value["text"] == "prefers the aisle seat"
    assert again.created_at == created and again.updated_at >= created
    # The same value under another key is another item (no de-duplication across keys).
    store.put(ns, "seat-copy", {"text": "prefers the aisle seat", "rank": 2})
    assert store.get(ns, "seat-copy").value == again.value
    store.delete(ns, "seat")
    assert store.get(ns, "seat") is None
    assert store.get(ns, "seat-copy") is not None


def test_search_by_prefix_filter_and_query(store):
    store.put(("users", "alice", "prefs"), "food", {"text": "vegetarian, loves mushrooms", "kind": "food", "level": 3})
    store.put(("users", "alice", "prefs"), "travel", {"text": "window seat on long flights", "kind": "travel", "level": 5})
    store.put(("users", "bob", "prefs"), "food", {"text": "allergic to peanuts", "kind": "food", "level": 1})
    store.put(("teams", "core"), "lead", {"text": "Alice leads the core team", "kind": "org", "level": 2})

    alice = store.search(("users", "alice"))
    assert {i.key for i in alice} == {"food", "travel"}
    assert all(isinstance(i, SearchItem) and i.score is None for i in alice)
    assert {(i.namespace, i.key) for i in store.search(("users",))} == {
        (("users", "alice", "prefs"), "food"), (("users", "alice", "prefs"), "travel"), (("users", "bob", "prefs"), "food"),
    }
    assert [i.namespace for i in store.search(("users",), filter={"kind": "food", "level": {"$gte": 2}})] == [
        ("users", "alice", "prefs")
    ]
    assert {i.key for i in store.search(("users",), filter={"level": {"$lt": 5, "$ne": 1}})} == {"food"}

    hits = store.search(("users",), query="what does the user eat? mushrooms")
    assert hits[0].value["text"] == "vegetarian, loves mushrooms"
    assert hits[0].score is not None and 0 < hits[0].score <= 1
    assert [h.key for h in store.search(("users", "bob"), query="peanuts")] == ["food"]
    # limit and offset page through the same order.
    every = [(i.namespace, i.key) for i in store.search(("users",), limit=10)]
    assert [(i.namespace, i.key) for i in store.search(("users",), limit=1, offset=1)] == every[1:2]


def test_unindexed_items_are_stored_but_not_searched_by_meaning(store):
    store.put(("docs",), "secret", {"text": "the launch code is tulip"}, index=False)
    assert store.get(("docs",), "secret").value["text"] == "the launch code is tulip"
    assert store.search(("docs",), query="launch code tulip") == []
    assert [i.key for i in store.search(("docs",))] == ["secret"]


def test_list_namespaces_with_prefix_suffix_and_depth(store):
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        store.put(ns, "k", {"text": "v"})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("z", "b", "c")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]
    store.delete(("a", "x"), "k")
    assert ("a", "x") not in store.list_namespaces()


def test_ttl_expires_an_item(server):
    store = MuistiStore(Client(server.url), namespace=f"lgt{uuid.uuid4().hex[:8]}")
    store.put(("s",), "short", {"text": "gone soon"}, ttl=1 / 60)  # one second
    store.put(("s",), "long", {"text": "stays"}, ttl=60)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    time.sleep(2.2)
    assert store.get(("s",), "short") is None
    assert store.get(("s",), "long") is not None
    assert [i.key for i in store.search(("s",))] == ["long"]


async def test_the_async_methods(store):
    await store.aput(("async",), "one", {"text": "first async item"})
    assert (await store.aget(("async",), "one")).value == {"text": "first async item"}
    hits = await store.asearch(("async",), query="first item")
    assert [h.key for h in hits] == ["one"]
    assert await store.alist_namespaces(prefix=("async",)) == [("async",)]
