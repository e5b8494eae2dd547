"""The client cannot drift from the server's OpenAPI document."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

from muisti import AsyncClient, Client
from muisti.client import OPERATIONS

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[2] / "docs" / "openapi.json"


def test_the_wire_types_are_what_the_document_generates():
    run = subprocess.run(
        [sys.executable, str(HERE.parent / "scripts" / "generate_types.py"), "--check", str(DOC)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_operation_of_the_document_has_a_method_on_both_clients():
    document = json.loads(DOC.read_text())
    operations = {op["operationId"] for path in document["paths"].values() for op in path.values()}
    covered = set(OPERATIONS.values())
    assert operations - covered == set(), "operations without a client method"
    assert covered - operations == set(), "client methods for operations the server lacks"
    for method in OPERATIONS:
        assert callable(getattr(Client, method)), method
        assert callable(getattr(AsyncClient, method)), method
    # The async client's streaming and paging methods are its own, and async.
    assert inspect.isasyncgenfunction(AsyncClient.chat_stream)
    assert inspect.isasyncgenfunction(AsyncClient.iter_memories)
