"""Where the LangGraph integrations keep their records on the server."""

from __future__ import annotations

import hashlib
import re

_NAMESPACE = re.compile(r"^[A-Za-z0-9_:-]+(\.[A-Za-z0-9_:-]+)*$")
MAX_PREFIX = 40


def digest(*parts: str) -> str:
    """A short, stable name for any strings (96 bits of SHA-256, hex)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:24]


def check_prefix(prefix: str) -> str:
    """A namespace prefix: dot-separated names of letters, digits, `_`, `:` and `-`."""
    if not _NAMESPACE.match(prefix) or len(prefix) > MAX_PREFIX or prefix.startswith("_muisti"):
        raise ValueError(
            f"namespace prefix {prefix!r}: 1-{MAX_PREFIX} characters, dot-separated names of "
            "letters, digits, '_', ':' and '-'"
        )
    return prefix
