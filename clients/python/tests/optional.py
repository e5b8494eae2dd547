"""An optional framework package a test needs: skipped with a printed line when it is not
installed, a failure under `MUISTI_REQUIRE_SERVICES=1` (CI installs every one)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        message = f"python package {name} unavailable ({e}); .ci/run installs it"
        if os.environ.get("MUISTI_REQUIRE_SERVICES") == "1":
            pytest.fail(message, pytrace=False)
        print(f"skipped: {message}")
        pytest.skip(message, allow_module_level=True)
