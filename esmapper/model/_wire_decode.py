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

Each model has a second, strict mirror: the same types, refusing any key the model does
not declare (``forbid_unknown_fields``, down every embedded mirror; the id, read from the
hit, may be stored or not). It is tried first: a source it reads holds only declared keys,
and the ``DocState`` says so (:attr:`~esmapper.model.state.DocState.declared_only`, the
original's very bytes object), so a save of the document need not look for undeclared keys
to keep. A source it refuses for such a key is read by the lenient mirror, and so is the
rest of the page (an index whose documents carry such keys pays one extra decode per page).

The generated code makes no call per hit but the mirror's decode (and the conversions a
date or an enum takes): one loop over the hits, the version and the ``DocState`` built
inline (:func:`~esmapper.model.state.version_code`,
:func:`~esmapper.model.state.loaded_state_code`), each model, embedded ones included,
filled through a "raw" subclass of it (:func:`esmapper.model._raw.raw_class`: the same layout, no
``__setattr__`` of its own, the slots themselves under the fields' names), whose
attribute stores are the interpreter's plain slot stores, then given its class
(``__class__ =``: the same layout, so allowed and cheap). The document is an instance of
the model, as ``from_source`` makes it; the raw subclass never escapes (a hit whose values
the mirror refuses leaves a half-built one to the garbage collector).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from esmapper import _json
from esmapper._raw_answers import Int64
from esmapper.model._raw import raw_class
from esmapper.model.codec import _load_expr
from esmapper.model.fields import FieldSpec
from esmapper.model.state import DocState, loaded_state_code, version_code, version_of

__all__ = ["has_mirror", "hydrate", "load_hit"]

#: the JSON types each scalar kind's expression takes as orjson gives them
_SCALARS: dict[str, Any] = {
    "str": str,
    "int": Int64,
    "float": Int64 | float,
    "bool": bool,
    "datetime": str | Int64 | float,
}

#: a stored key read from the hit's metadata instead (the id), absent from the source
_ABSENT = msgspec.Raw(b"null")

#: ``load_all(hits, append, slow)``: appends the document of every hit, those the mirror
#: cannot read as ``slow(hit, version, condition)`` builds them
Loader = Callable[[Sequence[Any], Callable[[Any], None], Callable[[Any, Any, Any], Any]], None]

_loaders: dict[type, Loader | None] = {}
_lock = threading.Lock()


class _Gen:
    """The generated code's names (``ns``) and the embedded models' mirrors made so far."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        #: (an embedded model, strict) -> (its mirror Struct, its names' prefix), ``None``:
        #: no mirror
        self.inner: dict[tuple[type, bool], tuple[type, str] | None] = {}
        self.builders: dict[type, str] = {}

    def value_type(self, spec: FieldSpec, depth: int, strict: bool = False) -> Any:
        """The mirror's type of one value of ``spec`` (``None``: no exact type);
        ``strict``: its embedded objects' mirrors refuse keys their models do not declare."""
        if spec.kind in _SCALARS:
            return _SCALARS[spec.kind]
        if spec.kind == "enum" and spec.enum is not None:
            kinds = {type(member.value) for member in spec.enum}
            if kinds == {str}:
                return str
            return Int64 if kinds == {int} else None
        if spec.kind == "inner" and spec.inner is not None:
            built = self.mirror(spec.inner, depth + 1, strict)
            return None if built is None else built[0]
        return None  # "any": what orjson gives is not typed

    def field_type(self, spec: FieldSpec, depth: int, strict: bool = False) -> Any:
        one = self.value_type(spec, depth, strict)
        if one is None:
            return None
        return list[one] | one | None if spec.many else one | None  # type: ignore[valid-type]

    def model(self, cls: type, prefix: str) -> bool:
        """Put ``cls`` and its raw class (:func:`~esmapper.model._raw.raw_class`) in ``ns``
        under ``prefix``; ``False`` when it has no raw class."""
        raw = raw_class(cls)
        if raw is None:
            return False
        self.ns[f"{prefix}_cls"], self.ns[f"{prefix}_raw"] = cls, raw
        return True

    def mirror(self, cls: type, depth: int, strict: bool = False) -> tuple[type, str] | None:
        """The mirror Struct of the embedded model ``cls`` (every key required: a key
        missing fails the decoding; ``strict``: a key ``cls`` does not declare too) and its
        names' prefix, or ``None`` when ``cls`` has no exact mirror."""
        key = (cls, strict)
        if key in self.inner:
            return self.inner[key]
        self.inner[key] = None  # (a model embedding itself: no mirror)
        # named before the embedded models it embeds are built: each its own names
        prefix = f"_m{len(self.inner)}"
        info = cls.__esmapper__  # type: ignore[attr-defined]
        if depth > 8 or not all(field.stored for field in info.fields):
            return None
        types_ = [(field.name, self.field_type(field, depth, strict)) for field in info.fields]
        if any(kind is None for _, kind in types_) or not (strict or self.model(cls, prefix)):
            return None
        # every key required; not tracked by the collector (it holds no cycle)
        struct = msgspec.defstruct(
            f"{cls.__name__}{'Strict' if strict else ''}Mirror",
            types_,
            gc=False,
            forbid_unknown_fields=strict,
        )
        self.inner[key] = built = (struct, prefix)
        return built

    def fill(
        self, prefix: str, fields: Sequence[FieldSpec], src: str, dst: str, depth: int
    ) -> list[str]:
        """Statements setting ``fields`` of the raw instance ``dst`` of a model (its names
        under ``prefix``) from the mirror ``src`` (the values as the codec converts them)."""
        lines: list[str] = []
        tmp = f"_v{depth}"
        for spec in fields:
            name = spec.name
            if spec.kind == "inner" and not spec.many:
                assert spec.inner is not None
                built = self.mirror(spec.inner, depth + 1)
                assert built is not None
                inner = f"_o{depth + 1}"
                lines += [
                    f"{tmp} = {src}.{name}",
                    f"if {tmp} is None:",
                    f"    {dst}.{name} = None",
                    "else:",
                    *(f"    {line}" for line in self.build(spec.inner, tmp, inner, depth + 1)),
                    f"    {dst}.{name} = {inner}",
                ]
                continue
            expression = self.expr(spec, tmp, prefix, depth)
            if expression == tmp:
                lines.append(f"{dst}.{name} = {src}.{name}")
            else:
                lines += [f"{tmp} = {src}.{name}", f"{dst}.{name} = {expression}"]
        return lines

    def build(self, cls: type, src: str, dst: str, depth: int) -> list[str]:
        """Statements making ``dst`` the embedded ``cls`` of the mirror ``src``, inline."""
        built = self.mirror(cls, depth)
        assert built is not None
        prefix = built[1]
        info = cls.__esmapper__  # type: ignore[attr-defined]
        return [
            f"{dst} = {prefix}_raw()",
            f"{dst}._esm_state = None",
            *self.fill(prefix, info.fields, src, dst, depth),
            f"{dst}.__class__ = {prefix}_cls",
        ]

    def builder(self, cls: type, depth: int) -> str:
        """The name of a generated function building the embedded ``cls`` from its mirror
        (for a list of them)."""
        name = self.builders.get(cls)
        if name is None:
            built = self.mirror(cls, depth)
            assert built is not None
            name = self.builders[cls] = f"{built[1]}_build"
            lines = [
                f"def {name}(_e):",
                *(f"    {line}" for line in self.build(cls, "_e", "_b", depth)),
                "    return _b",
            ]
            exec(compile("\n".join(lines) + "\n", f"<mirror {cls.__qualname__}>", "exec"), self.ns)
        return name

    def expr(self, spec: FieldSpec, var: str, prefix: str, depth: int) -> str:
        """The expression turning the mirror's value ``var`` of ``spec`` into the
        attribute: the codec's, but a list of embedded objects built from their mirrors."""
        if spec.many and spec.kind in ("str", "int", "float", "bool"):
            # the mirror's list is the document's own (the original is bytes): no copy
            return f"(None if {var} is None else ({var} if type({var}) is list else [{var}]))"
        if spec.kind != "inner":
            return _load_expr(spec, var, self.ns, prefix)
        assert spec.inner is not None and spec.many
        build = self.builder(spec.inner, depth + 1)
        return (
            f"(None if {var} is None else [{build}(_x) for _x in "
            f"({var} if type({var}) is list else [{var}])])"
        )


def _compile(cls: type) -> Loader | None:
    info = cls.__esmapper__  # type: ignore[attr-defined]
    ns: dict[str, Any] = {"_new": object.__new__, "_ValidationError": msgspec.ValidationError}
    stored: list[FieldSpec] = []
    meta: list[str] = []
    #: the stored fields read from the hit's metadata (the id): any value, or none
    others: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for spec in info.fields:
        if spec.name == "id" and info.is_document:
            meta.append("o.id = h._id")
            if spec.stored:
                others.append((spec.name, msgspec.Raw, _ABSENT))
        elif spec.name == "version" and info.versioned:
            meta.append("o.version = version")
        elif not spec.stored:
            return None
        else:
            stored.append(spec)
    gen = _Gen(ns)
    types_ = [(spec.name, gen.field_type(spec, 0)) for spec in stored]
    if any(kind is None for _, kind in types_) or not gen.model(cls, ""):
        return None
    # every key required; not tracked by the collector (it holds no cycle)
    struct = msgspec.defstruct(f"{cls.__name__}SourceMirror", types_, gc=False)
    ns["_decode"] = msgspec.json.Decoder(struct).decode
    # the same, refusing any key the model does not declare (the keys a save keeps)
    strict = msgspec.defstruct(
        f"{cls.__name__}StrictSourceMirror",
        [*((spec.name, gen.field_type(spec, 0, strict=True)) for spec in stored), *others],
        gc=False,
        forbid_unknown_fields=True,
    )
    ns["_decode_strict"] = msgspec.json.Decoder(strict).decode
    fill = ["o = _raw()", *meta, *gen.fill("", stored, "s", "o", 0)]
    state = loaded_state_code(
        ns,
        "st",
        original="b",
        index="h._index",
        version="version",
        condition="condition",
        declared_only="declared",
    )
    lines = [
        "def load_all(hits, append, slow):",
        "    strict = True",
        "    for h in hits:",
        "        raw = h._source",
        "        seq, term = h._seq_no, h._primary_term",
        *(f"        {line}" for line in version_code("seq", "term", "version", "condition")),
        "        if len(raw) > 4:",  # not absent, not null
        "            try:",
        # only declared keys (the original then vouches for itself at a save); once a
        # hit of the page had others, the rest of the page is read without the check
        "                if strict:",
        "                    try:",
        "                        s = _decode_strict(raw)",
        "                        b = declared = bytes(raw)",
        "                    except _ValidationError:",
        "                        s = _decode(raw)",
        "                        strict = declared = None",
        "                        b = bytes(raw)",
        "                else:",
        "                    s = _decode(raw)",
        "                    b = bytes(raw)",
        "                    declared = None",
        *(f"                {line}" for line in fill),
        # a key missing, another type, a value the expression refuses: the current path
        "            except Exception:",
        "                pass",
        "            else:",
        *(f"                {line}" for line in state),
        "                o._esm_state = st",
        "                o.__class__ = _cls",
        "                append(o)",
        "                continue",
        "        append(slow(h, version, condition))",
    ]
    exec(compile("\n".join(lines) + "\n", f"<mirror {cls.__qualname__}>", "exec"), ns)
    return ns["load_all"]  # type: ignore[no-any-return]


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
    from_source, loads = info.from_source, _json.loads

    def slow(hit: Any, version: str | None, condition: Any) -> Any:
        """The document of ``hit`` as the current path builds it (the parsed source)."""
        raw = hit._source
        source = loads(bytes(raw)) if len(raw) else None
        if source is None:
            if not by_id:
                return from_source({}, hit._id, version)
            source = {}
        state = DocState(source, hit._index, None, partial, version, condition)
        return from_source(source, hit._id, version, state)

    documents: list[Any] = []
    load = None if partial else _loader(info.cls)
    if load is not None:
        load(hits, documents.append, slow)
        return documents
    for hit in hits:
        documents.append(slow(hit, *version_of(hit._seq_no, hit._primary_term)))
    return documents
