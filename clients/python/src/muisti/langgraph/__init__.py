"""LangGraph over muisti: `MuistiSaver` (a checkpointer) and `MuistiStore` (a `BaseStore`),
each built from a `muisti.Client`. Needs `pip install 'muisti[langgraph]'`."""

from .checkpoint import MuistiSaver
from .store import MuistiStore

__all__ = ["MuistiSaver", "MuistiStore"]
