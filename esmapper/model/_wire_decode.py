"""Documents straight from a hit's ``_source`` bytes (issue 28): a generated ``msgspec``
Struct "mirror" of a model's stored fields, decoded in C, turned into the model by the
codec's own value expressions (:func:`esmapper.model.codec._load_expr`: the very
conversions ``from_source`` makes), the ``DocState``'s original left as the bytes (decoded
when first read).

The mirror types each field as orjson would give its value and the codec's expression
takes it: ``str``, ``bool``, an integer of 64 bits (orjson reads a longer one as a float),
an integer or a float for a ``float`` field, a string or a number for a date, an enum's
value type, an embedded model's own mirror, and for a list field a list of those or one of
them; ``null`` everywhere. Keys the model does not declare (undeclared or hidden fields)
are skipped by the mirror and kept in the original bytes, as the parsed ``_source`` keeps
them today.

A hit the mirror cannot read exactly takes :func:`hydrate`'s other path, the current one
(the ``_source`` parsed, ``info.from_source``), for that hit only: a key missing (a partial
load, a document written by another program), a value of another type (lenient values,
an unknown enum value, a date the expression refuses), an integer beyond 64 bits, no
``_source``. A model with a field of kind ``any`` (a ``dict``/``Any`` field, the custom
fields' holder), an embedded model with such a field or a field that is not stored, has no
mirror: every hit of it takes the current path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import msgspec

from esmapper import _json
from esmapper.model.codec import _load_expr, _setters
from esmapper.model.fields import FieldSpec
from esmapper.model.state import DocState, version_of

__all__ = ["has_mirror", "hydrate", "load_hit"]

#: an integer orjson reads as an integer (a longer one it reads as a float)
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
#: the JSON types each scalar kind's expression takes as orjson gives them
_SCALARS: dict[str, Any] = {
    "str": str,
    "int": _Int64,
    "float": _Int64 | float,
    "bool": bool,
    "datetime": str | _Int64 | float,
}

#: ``load(raw, id, version, state)``: the model, or ``None`` (the hit takes the current path)
Loader = Callable[[Any, Any, Any, Any], Any]

_loaders: dict[type, Loader | None] = {}
_lock = threading.Lock()


class _Gen:
    """The names generated code uses (``ns``) and the embedded models' mirrors made so far."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.inner: dict[type, tuple[type, str] | None] = {}

    def value_type(self, spec: FieldSpec, depth: int) -> Any:
        """The mirror's type of one value of ``spec`` (``None``: no exact type)."""
        if spec.kind in _SCALARS:
            return _SCALARS[spec.kind]
        if spec.kind == "enum" and spec.enum is not None:
            kinds = {type(member.value) for member in spec.enum}
            if kinds == {str}:
                return str
            return _Int64 if kinds == {int} else None
        if spec.kind == "inner" and spec.inner is not None:
            built = self.mirror(spec.inner, depth + 1)
            return None if built is None else built[0]
        return None  # "any": what orjson gives is not typed

    def field_type(self, spec: FieldSpec, depth: int) -> Any:
        one = self.value_type(spec, depth)
        if one is None:
            return None
        return list[one] | one | None if spec.many else one | None  # type: ignore[valid-type]

    def mirror(self, cls: type, depth: int) -> tuple[type, str] | None:
        """The mirror Struct of the embedded model ``cls`` (every key required: a key
        missing fails the decoding) and the name of the generated function building the
        model from it, or ``None`` when ``cls`` has no exact mirror."""
        if cls in self.inner:
            return self.inner[cls]
        self.inner[cls] = None  # (a model embedding itself: no mirror)
        # named before the embedded models it embeds are built: each its own names
        prefix = f"_m{len(self.inner)}"
        info = cls.__esmapper__  # type: ignore[attr-defined]
        if depth > 8 or not all(field.stored for field in info.fields):
            return None
        types = [(field.name, self.field_type(field, depth)) for field in info.fields]
        if any(kind is None for _, kind in types):
            return None
        ns = self.ns
        struct = msgspec.defstruct(f"{cls.__name__}Mirror", types)  # every key required
        ns[f"{prefix}_cls"] = cls
        setter = _setters(cls, {}, ns, prefix, obj="_o")
        lines = [
            f"def {prefix}_build(_e):",
            f"    _o = _new({prefix}_cls)",
            f"    {setter('_esm_state')}None)",
        ]
        for field in info.fields:
            lines += [
                f"    _w = _e.{field.name}",
                f"    {setter(field.name)}{self.expr(field, '_w', prefix, depth)})",
            ]
        lines.append("    return _o")
        exec(compile("\n".join(lines) + "\n", f"<mirror {cls.__qualname__}>", "exec"), ns)
        self.inner[cls] = built = (struct, f"{prefix}_build")
        return built

    def expr(self, spec: FieldSpec, var: str, prefix: str, depth: int) -> str:
        """The expression turning the mirror's value ``var`` of ``spec`` into the
        attribute: the codec's, but an embedded object built from its own mirror."""
        if spec.many and spec.kind in ("str", "int", "float", "bool"):
            # the mirror's list is the document's own (the original is bytes): no copy
            return f"(None if {var} is None else ({var} if type({var}) is list else [{var}]))"
        if spec.kind != "inner":
            return _load_expr(spec, var, self.ns, prefix)
        assert spec.inner is not None
        built = self.mirror(spec.inner, depth + 1)
        assert built is not None
        build = built[1]
        if spec.many:
            return (
                f"(None if {var} is None else [{build}(_x) for _x in "
                f"({var} if type({var}) is list else [{var}])])"
            )
        return f"(None if {var} is None else {build}({var}))"


def _compile(cls: type) -> Loader | None:
    info = cls.__esmapper__  # type: ignore[attr-defined]
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "_set": object.__setattr__,
        "_cls": cls,
    }
    stored: list[FieldSpec] = []
    for spec in info.fields:
        if (spec.name == "id" and info.is_document) or (spec.name == "version" and info.versioned):
            continue
        if not spec.stored:
            return None
        stored.append(spec)
    gen = _Gen(ns)
    types = [(spec.name, gen.field_type(spec, 0)) for spec in stored]
    if any(kind is None for _, kind in types):
        return None
    struct = msgspec.defstruct(f"{cls.__name__}SourceMirror", types)  # every key required
    ns["_decode"] = msgspec.json.Decoder(struct).decode
    ns["_Err"] = (msgspec.ValidationError, msgspec.DecodeError)
    setter = _setters(cls, {}, ns)
    body = ["self = _new(_cls)", f"{setter('_esm_state')}state)"]
    for spec in info.fields:
        if spec.name == "id" and info.is_document:
            body.append(f"{setter('id')}id)")
        elif spec.name == "version" and info.versioned:
            body.append(f"{setter('version')}version)")
        else:
            body += [f"_v = s.{spec.name}", f"{setter(spec.name)}{gen.expr(spec, '_v', '', 0)})"]
    lines = [
        "def load(raw, id, version, state):",
        "    try:",
        "        s = _decode(raw)",
        "    except _Err:",
        "        return None",
        "    try:",
        *(f"        {line}" for line in body),
        "    except Exception:",  # a value the expression refuses: the current path
        "        return None",
        "    return self",
    ]
    exec(compile("\n".join(lines) + "\n", f"<mirror {cls.__qualname__}>", "exec"), ns)
    return ns["load"]  # type: ignore[no-any-return]


def _loader(cls: type) -> Loader | None:
    try:
        return _loaders[cls]
    except KeyError:
        pass
    with _lock:
        if cls not in _loaders:
            _loaders[cls] = _compile(cls)
        return _loaders[cls]


def has_mirror(info: Any) -> bool:
    """Whether ``info``'s model has a mirror (see the module docstring)."""
    return _loader(info.cls) is not None


def load_hit(info: Any, hit: Any, partial: bool) -> Any:
    """The document of one :class:`~esmapper._raw_answers.Hit`: through the mirror when it
    reads the ``_source`` exactly (the original left as its bytes), else as the current
    path builds it from the parsed ``_source`` (``None`` or absent: no ``DocState``)."""
    return hydrate(info, [hit], partial)[0]


def hydrate(info: Any, hits: Sequence[Any], partial: bool, by_id: bool = False) -> list[Any]:
    """The documents of ``hits`` (:class:`~esmapper._raw_answers.Hit` s, in order), each
    as :func:`load_hit` builds it. ``partial``: read with ``includes``/``excludes`` (the
    mirror is not tried: such sources lack keys). ``by_id``: hits of a GET/multi-GET, so
    one without a ``_source`` (disabled in the mapping) is still a stored document: it
    gets a ``DocState`` with an empty original, as a search hit does not."""
    load = None if partial else _loader(info.cls)
    from_source, loads = info.from_source, _json.loads
    documents: list[Any] = []
    append = documents.append
    for hit in hits:
        version, condition = version_of(hit._seq_no, hit._primary_term)
        raw = hit._source
        if load is not None and len(raw) > 4:  # not absent, not null
            data = bytes(raw)
            state = DocState(data, hit._index, None, False, version, condition)
            document = load(raw, hit._id, version, state)
            if document is not None:
                append(document)
                continue
            source = loads(data)
        else:
            source = loads(bytes(raw)) if len(raw) else None
        if source is None:
            if not by_id:
                append(from_source({}, hit._id, version))
                continue
            source = {}
        state = DocState(source, hit._index, None, partial, version, condition)
        append(from_source(source, hit._id, version, state))
    return documents
