"""`MuistiSaver` against LangGraph's official checkpointer conformance suite, and in a graph."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, TypedDict

from langgraph.checkpoint.conformance import checkpointer_test, validate

from muisti import Client
from muisti.langgraph import MuistiSaver


async def test_the_official_conformance_suite_passes_every_capability(server):
    @checkpointer_test(name="MuistiSaver")
    async def saver():
        yield MuistiSaver(Client(server.url), namespace=f"cp{uuid.uuid4().hex[:8]}")

    report = await validate(saver)
    report.print_report()
    assert report.passed_all_base(), report.to_dict()
    # The extended capabilities (delete_for_runs, copy_thread, prune) are implemented too.
    summary = report.to_dict()
    assert summary["conformance_level"] == "FULL", summary
    results = summary["results"]
    assert set(results) == {
        "put", "put_writes", "get_tuple", "list", "delete_thread", "delete_for_runs", "copy_thread", "prune",
    }
    for name, result in results.items():
        assert result["detected"] and result["passed"] and result["tests_failed"] == 0, (name, result)
        assert result["tests_passed"] > 0, name


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def test_a_graph_keeps_its_state_across_invocations_and_clients(server):
    from langgraph.graph import END, START, StateGraph

    def step(state: State) -> dict:
        return {"steps": [f"step {len(state['steps'])}"]}

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    thread = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}

    graph = builder.compile(checkpointer=MuistiSaver(Client(server.url)))
    assert graph.invoke({"steps": ["start"]}, thread)["steps"] == ["start", "step 1"]
    assert graph.invoke({"steps": ["again"]}, thread)["steps"] == ["start", "step 1", "again", "step 3"]

    # A second saver over a new client sees the same thread: the state is on the server.
    other = builder.compile(checkpointer=MuistiSaver(Client(server.url)))
    state = other.get_state(thread)
    assert state.values["steps"] == ["start", "step 1", "again", "step 3"]
    history = list(other.get_state_history(thread))
    assert len(history) >= 4
    assert [h.config["configurable"]["checkpoint_id"] for h in history] == sorted(
        (h.config["configurable"]["checkpoint_id"] for h in history), reverse=True
    )


def test_checkpoints_are_application_state_not_memories(server):
    """A thread's checkpoints live under `_state.`: `/v1/stats` counts them apart, in sum,
    and neither lists their namespaces nor counts them as memories."""
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(State)
    builder.add_node("step", lambda state: {"steps": ["one"]})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    client = Client(server.url)
    before = client.stats()
    graph = builder.compile(checkpointer=MuistiSaver(client))
    for n in range(2):
        graph.invoke({"steps": ["start"]}, {"configurable": {"thread_id": f"t-{n}-{uuid.uuid4()}"}})
    after = client.stats()
    assert after.total == before.total, "checkpoints are not memories"
    assert [n.namespace for n in after.namespaces] == [n.namespace for n in before.namespaces]
    assert not any(n.namespace.startswith("_state.") for n in after.namespaces)
    assert after.state.records > before.state.records
    assert after.state.namespaces > before.state.namespaces
