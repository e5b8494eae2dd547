"""The Python client of muisti, long-term memory for AI agents.

```python
from muisti import Client

client = Client("http://127.0.0.1:7878")
client.remember("Prefers a window seat", user_id="alice")
hits = client.recall("where does Alice like to sit?", user_id="alice", limit=3)
print(hits[0].memory.content, hits[0].score)
```

`AsyncClient` has the same methods as coroutines. `muisti.langgraph` holds LangGraph's store
and checkpointer over a client, `muisti.langchain` LangChain's chat message history.
"""

from . import types
from .client import AsyncClient, Client, StreamEvent
from .errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConfirmationRequiredError,
    ConflictError,
    ConnectionError,
    MuistiError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnavailableError,
    ValidationError,
)

__version__ = "0.1.0"

__all__ = [
    "ApiError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfirmationRequiredError",
    "ConflictError",
    "ConnectionError",
    "MuistiError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "StreamEvent",
    "UnavailableError",
    "ValidationError",
    "types",
]
