"""Decoding and encoding of the generated wire types (`muisti.types`)."""

from __future__ import annotations

import dataclasses
import keyword
from typing import Any, TypeVar

T = TypeVar("T", bound="Wire")


def _attr(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def _wire_name(attr: str) -> str:
    if attr.endswith("_") and keyword.iskeyword(attr[:-1]):
        return attr[:-1]
    return attr


class Wire:
    """The base of every wire type: `from_wire` decodes a JSON object, `to_wire` encodes."""

    __wire_types__: dict[str, Any] = {}

    @classmethod
    def from_wire(cls: type[T], data: Any) -> T:
        """Decodes a JSON object (as `json.loads` gives it) into this type."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        from .types import SCHEMAS

        known = {f.name for f in dataclasses.fields(cls)} - {"_unknown"}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        unknown: dict[str, Any] = {}
        for key, value in data.items():
            attr = _attr(key)
            if attr not in known:
                unknown[key] = value
                continue
            kind = cls.__wire_types__.get(key)
            if kind is None or value is None:
                values[attr] = value
            elif isinstance(kind, str):
                values[attr] = SCHEMAS[kind].from_wire(value)
            elif isinstance(kind, list):
                values[attr] = [SCHEMAS[kind[0]].from_wire(v) for v in value]
            else:
                (name,) = kind
                values[attr] = {k: SCHEMAS[name].from_wire(v) for k, v in value.items()}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in values and f.name != "_unknown":
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    values[f.name] = None
        return cls(**values, _unknown=unknown)  # type: ignore[call-arg]

    def to_wire(self) -> dict[str, Any]:
        """This value as a JSON object; fields at `None` are left out."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name == "_unknown":
                continue
            value = getattr(self, f.name)
            if value is not None:
                out[_wire_name(f.name)] = _encode(value)
        out.update(getattr(self, "_unknown", {}) or {})
        return out


def _encode(value: Any) -> Any:
    if isinstance(value, Wire):
        return value.to_wire()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value
