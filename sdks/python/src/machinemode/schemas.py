"""JSON Schema 2020-12 from Python type hints, for events (permissive) and records (strict).

A domain event is a dataclass (or a TypedDict) marked with :func:`event`, which names its
``type``. Its schema is generated from its type hints, so the published ``schema`` (§10) and
what the emitter writes come from one definition. Supported hints: ``str``, ``int``,
``float``, ``bool``, ``None``, ``Optional[X]``, ``Union[...]``, ``List[X]``/``list[X]``,
``Dict[str, X]``, ``Literal[...]``, nested dataclasses and TypedDicts (as ``$defs`` entries
referenced with local ``$ref``s, never remote ones), and ``Annotated[X, {...}]`` whose dict is
merged into the property's schema (``{"description": ..., "minLength": 1}``). A dataclass
field's ``metadata={"schema": {...}}`` is merged the same way.

Event schemas allow unknown fields; record schemas (one line of ``--input-jsonl``, published as
``$defs.record`` of the input schema, docs/discovery.md) set ``additionalProperties: false`` at
every level (§10.3). :func:`load` validates a JSON value against the same rules and builds the
dataclass, so the published record schema and the command's reading of a record agree.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import math
import re
import typing
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, Union

__all__ = ["RecordError", "event", "event_type_of", "load", "schema_of", "to_fields"]

T = TypeVar("T")

#: The two top-level names AOI reserves on every event (§8.1).
RESERVED_FIELDS = ("type", "aoi")
_TYPE_ATTR = "__aoi_type__"
_TYPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")

_NoneType = type(None)
_UnionType: Any = getattr(__import__("types"), "UnionType", None)


def event(type_name: str) -> Callable[[Type[T]], Type[T]]:
    """Mark a dataclass or TypedDict as the domain event ``type_name`` (§8.2).

    :raises ValueError: for an ``aoi:`` name (that namespace is the framework's, §8.2), or a
        class with a field named ``type`` or ``aoi`` (reserved, §8.1).
    """
    if not isinstance(type_name, str) or not _TYPE_RE.match(type_name):
        raise ValueError(f"event type {type_name!r}: letters, digits, _ . - only "
                         "(and never the aoi: prefix, §8.2)")

    def mark(cls: Type[T]) -> Type[T]:
        for name in _field_hints(cls):
            if name in RESERVED_FIELDS:
                raise ValueError(f"{cls.__name__}.{name}: `type` and `aoi` are reserved (§8.1)")
        setattr(cls, _TYPE_ATTR, type_name)
        return cls

    return mark


def event_type_of(obj: Any) -> Optional[str]:
    """The ``type`` an :func:`event` class (or its instance) was marked with, else None."""
    cls = obj if isinstance(obj, type) else type(obj)
    value = getattr(cls, _TYPE_ATTR, None)
    return value if isinstance(value, str) else None


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _is_record_class(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_typeddict(tp))


# A class's evaluated hints, kept: ``get_type_hints`` compiles every string annotation again on
# each call, and a class is read by ``@event``, by its schema and by every record loaded.
_HINTS: weakref.WeakKeyDictionary[Any, Dict[str, Any]] = weakref.WeakKeyDictionary()


def _field_hints(cls: Any) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return hints


def _required(cls: Any) -> List[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    keys: Any = getattr(cls, "__required_keys__", None)
    hints = _field_hints(cls)
    if keys is None:
        return list(hints) if getattr(cls, "__total__", True) else []
    return [k for k in hints if k in keys]


def _field_extras(cls: Any, name: str) -> Dict[str, Any]:
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                extra = f.metadata.get("schema")
                out = dict(extra) if isinstance(extra, Mapping) else {}
                if "description" in f.metadata:
                    out["description"] = f.metadata["description"]
                if f.default is not dataclasses.MISSING and _jsonable(f.default):
                    out.setdefault("default", f.default)
                return out
    return {}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _split_annotated(tp: Any) -> Tuple[Any, Dict[str, Any]]:
    extras: Dict[str, Any] = {}
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp = args[0]
        for meta in args[1:]:
            if isinstance(meta, Mapping):
                extras.update(meta)
    return tp, extras


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is Union or (_UnionType is not None and origin is _UnionType)


def schema_of(tp: Any, *, strict: bool = False,
              defs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The JSON Schema of ``tp``; nested classes go into ``defs`` (referenced as
    ``#/$defs/Name``). A top-level class is expanded in place.

    ``strict`` gives ``additionalProperties: false`` on every object (input records, §10.3).

    :raises TypeError: for a hint this module does not translate.
    """
    if defs is None:
        defs = {}
    tp, extras = _split_annotated(tp)
    out = _object_schema(tp, strict, defs) if _is_record_class(tp) else _schema(tp, strict, defs)
    out.update(extras)
    return out


def _object_schema(cls: Any, strict: bool, defs: Dict[str, Any]) -> Dict[str, Any]:
    props: Dict[str, Any] = {}
    for name, hint in _field_hints(cls).items():
        prop = _schema(hint, strict, defs)
        prop.update(_field_extras(cls, name))
        props[name] = prop
    out: Dict[str, Any] = {"type": "object", "properties": props}
    doc = cls.__doc__
    if doc and not doc.startswith(cls.__name__ + "("):  # not the dataclass-generated one
        out["description"] = " ".join(doc.split())
    req = _required(cls)
    if req:
        out["required"] = req
    if strict:
        out["additionalProperties"] = False
    return out


def _schema(tp: Any, strict: bool, defs: Dict[str, Any]) -> Dict[str, Any]:
    tp, extras = _split_annotated(tp)
    out = _bare_schema(tp, strict, defs)
    out.update(extras)
    return out


def _bare_schema(tp: Any, strict: bool, defs: Dict[str, Any]) -> Dict[str, Any]:
    if tp is Any:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is _NoneType or tp is None:
        return {"type": "null"}
    if _is_record_class(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder first: recursive types terminate
            defs[name] = _object_schema(tp, strict, defs)
        return {"$ref": f"#/$defs/{name}"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)} if len(args) != 1 else {"const": args[0]}
    if _is_union(tp):
        members = [a for a in args if a is not _NoneType]
        nullable = len(members) != len(args)
        if len(members) == 1 and nullable:
            inner = _schema(members[0], strict, defs)
            simple = inner.get("type")
            if isinstance(simple, str) and set(inner) <= {"type", "description"}:
                return {**inner, "type": [simple, "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        alts = [_schema(a, strict, defs) for a in members]
        if nullable:
            alts.append({"type": "null"})
        return {"anyOf": alts}
    if origin in (list, collections.abc.Sequence):
        item = args[0] if args else Any
        return {"type": "array", "items": _schema(item, strict, defs)}
    if origin in (dict, collections.abc.Mapping):
        if args and args[0] is not str:
            raise TypeError(f"{tp!r}: JSON object keys are strings")
        value = args[1] if len(args) == 2 else Any
        return {"type": "object", "additionalProperties": _schema(value, strict, defs)}
    if tp in (list, List):
        return {"type": "array"}
    if tp in (dict, Dict):
        return {"type": "object"}
    raise TypeError(f"no JSON Schema for the type hint {tp!r}")


def to_fields(obj: Any) -> Dict[str, Any]:
    """An event instance as a JSON object: a dataclass by :func:`dataclasses.asdict`, a
    TypedDict or mapping as a dict copy."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"an event is a dataclass instance or a mapping, not {type(obj).__name__}")


class RecordError(ValueError):
    """A JSON value that does not fit the record type; :attr:`field` is its path."""

    def __init__(self, message: str, field: Optional[str]) -> None:
        super().__init__(message)
        self.field = field


def load(tp: Type[T], value: Any) -> T:
    """Check ``value`` (decoded JSON) against ``tp`` as :func:`schema_of` with ``strict``
    states it, and build it: nested dataclasses are constructed, TypedDicts stay dicts.

    :raises RecordError: naming the first offending field.
    """
    result: T = _load(tp, value, "")
    return result


def _path(base: str, name: str) -> str:
    return f"{base}.{name}" if base else name


def _load(tp: Any, value: Any, path: str) -> Any:
    tp, extras = _split_annotated(tp)
    out = _load_bare(tp, value, path)
    _check_extras(extras, out, path)
    return out


def _check_extras(extras: Mapping[str, Any], value: Any, path: str) -> None:
    where = path or "record"
    if isinstance(value, str):
        if "minLength" in extras and len(value) < extras["minLength"]:
            raise RecordError(f"{where} is shorter than {extras['minLength']} characters", path)
        if "maxLength" in extras and len(value) > extras["maxLength"]:
            raise RecordError(f"{where} is longer than {extras['maxLength']} characters", path)
        if "pattern" in extras and not re.search(extras["pattern"], value):
            raise RecordError(f"{where} does not match its pattern", path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in extras and value < extras["minimum"]:
            raise RecordError(f"{where} is below {extras['minimum']}", path)
        if "maximum" in extras and value > extras["maximum"]:
            raise RecordError(f"{where} is above {extras['maximum']}", path)
    if isinstance(value, list):
        if "minItems" in extras and len(value) < extras["minItems"]:
            raise RecordError(f"{where} has fewer than {extras['minItems']} items", path)
        if "maxItems" in extras and len(value) > extras["maxItems"]:
            raise RecordError(f"{where} has more than {extras['maxItems']} items", path)


def _load_bare(tp: Any, value: Any, path: str) -> Any:
    where = path or "record"
    if tp is Any:
        return value
    if tp is str:
        if not isinstance(value, str):
            raise RecordError(f"{where} is not a string", path)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise RecordError(f"{where} is not a boolean", path)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(f"{where} is not an integer", path)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise RecordError(f"{where} is not a number", path)
        return float(value)
    if tp is _NoneType or tp is None:
        if value is not None:
            raise RecordError(f"{where} is not null", path)
        return None
    if _is_record_class(tp):
        return _load_object(tp, value, path)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        for a in args:
            if value == a and type(value) is type(a):
                return value
        raise RecordError(f"{where} is not one of the allowed values", path)
    if _is_union(tp):
        for a in args:
            try:
                return _load(a, value, path)
            except RecordError:
                continue
        raise RecordError(f"{where} has the wrong type", path)
    if origin in (list, collections.abc.Sequence):
        if not isinstance(value, list):
            raise RecordError(f"{where} is not an array", path)
        item = args[0] if args else Any
        return [_load(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            raise RecordError(f"{where} is not an object", path)
        vt = args[1] if len(args) == 2 else Any
        return {k: _load(vt, v, _path(path, k)) for k, v in value.items()}
    if tp in (list, List):
        if not isinstance(value, list):
            raise RecordError(f"{where} is not an array", path)
        return value
    if tp in (dict, Dict):
        if not isinstance(value, dict):
            raise RecordError(f"{where} is not an object", path)
        return value
    raise TypeError(f"no JSON reading for the type hint {tp!r}")


def _load_object(cls: Any, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise RecordError(f"{path or 'the record'} is not a JSON object", path or None)
    hints = _field_hints(cls)
    for key in value:
        if key not in hints:
            shown = key if re.match(r"^[A-Za-z0-9_]{1,64}$", key) else None
            raise RecordError(f"unknown field {shown or '(unprintable)'}",
                              _path(path, shown) if shown else (path or None))
    for key in _required(cls):
        if key not in value:
            raise RecordError(f"missing field {key}", _path(path, key))
    built: Dict[str, Any] = {}
    for key, item in value.items():
        extras = _field_extras(cls, key)
        extras.pop("default", None)
        extras.pop("description", None)
        loaded = _load(hints[key], item, _path(path, key))
        _check_extras(extras, loaded, _path(path, key))
        built[key] = loaded
    if dataclasses.is_dataclass(cls):
        factory: Callable[..., Any] = cls  # type: ignore[assignment]
        return factory(**built)
    return built

