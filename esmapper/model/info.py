"""Per-model metadata: the ``class Index:`` options and the compiled model description."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from esmapper._features import NO_POINTS, Points, attach, index_option_names
from esmapper.errors import IndexConfigurationError
from esmapper.model.catalog import FieldCatalog
from esmapper.model.fields import FieldSpec
from esmapper.model.lenient import LenientCodec
from esmapper.model.normalize import Invalid, invalid_error
from esmapper.reindex_scripts import ReindexScriptValue, check_reindex_scripts

if TYPE_CHECKING:
    from esmapper.model.codec import FromSource

__all__ = [
    "DEFAULT_CACHE_LIFETIME",
    "IndexOptions",
    "ModelInfo",
    "check_against_fields",
    "date_fields",
]

#: What ``class Index: cache = True`` (and a per-call ``cache=True`` on a model not cached
#: by default) keeps a by-id read for.
DEFAULT_CACHE_LIFETIME = _dt.timedelta(minutes=5)

INDEX_KINDS = ("versioned", "plain", "daily", "monthly")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


@attrs.frozen(slots=True)
class IndexOptions:
    """The options of a model's ``class Index:`` block.

    ``name`` is the alias reads and writes go through (the physical index itself for
    ``plain``; default: the class name in ``snake_case``, ``EmployeeReview`` ->
    ``employee_review``, also for a model without ``class Index:``); ``version`` the
    schema version (physical index ``<name>-v<version>``);
    ``kind`` one of ``versioned``, ``plain``, ``daily``, ``monthly``; ``settings`` the index
    settings; ``date_field`` picks the partition of time-series indexes; ``max_age`` their
    retention; ``id_fields`` the attributes a new document's id is composed from;
    ``cache`` the default cache lifetime of by-id reads (``None``: not cached; a
    ``timedelta``, a number of seconds, or ``True`` for five minutes);
    ``default_search_fields`` the fields a bare search term looks in; ``aliases`` extra
    field-name aliases for expressions; ``reindex_scripts`` maps a target version to the
    script(s) run while reindexing into it (Painless sources and field operations, see
    :mod:`esmapper.reindex_scripts`). The options a feature declares
    (``Feature.index_options``) are kept in ``extras``; the custom-field ones
    (``tenant_field``, ``custom_field_types``, ``auto_create_custom_fields``: see
    :mod:`esmapper.custom_fields`) are also read as attributes. ``pipeline``: the ingest
    pipeline every create and index write runs through: the name of an existing one, or
    its definition (``{"processors": [...], ...}``, created as ``<alias>-pipeline``; see
    :mod:`esmapper.indexes.pipelines`). ``dates``: the ``(created, updated)`` attributes the
    mapper dates (either may be ``None``; default ``("created_utc", "updated_utc")`` for
    ``em.HasDates`` models, none otherwise): every write sets the updated one, and a
    created one that is missing, before 1971 or in the future is corrected (see
    :mod:`esmapper._writes`, :mod:`esmapper._patch_actions`); ``()`` turns date tracking
    off. Notifications (:mod:`esmapper.bus`): ``notification_delay`` delays every
    ``entity_changed`` of the model (a ``timedelta`` or seconds; the bus holds it, see
    :class:`~esmapper.bus.MessageBus`), ``batch_notifications`` publishes one message per
    call and change type (``id=None``, ``ids`` the documents) instead of one per
    document, ``originals`` reads the stored source of a document saved without being
    loaded, so that receivers get its original and a soft delete is published as
    ``REMOVED`` (per call: ``originals=``). ``default_excludes``: fields (or patterns) a search
    for documents leaves out of ``_source`` when the call gives no ``excludes=``;
    ``required_fields``: fields every search for documents with a field selection still
    loads (``id`` always is). ``validator``: a callable (or a sequence of them)
    given each document added or saved, returning its error messages (``None``, a string
    or an iterable of strings); see :meth:`validation_errors`.
    """

    name: str
    version: int = 1
    kind: str = "versioned"
    settings: Mapping[str, Any] = attrs.field(factory=dict)
    date_field: str | None = None
    max_age: _dt.timedelta | None = None
    id_fields: tuple[str, ...] = ()
    cache: _dt.timedelta | None = None
    default_search_fields: tuple[str, ...] | None = None
    aliases: Mapping[str, str] = attrs.field(factory=dict)
    reindex_scripts: Mapping[int, ReindexScriptValue] = attrs.field(factory=dict)
    dynamic: bool | str = False
    pipeline: str | Mapping[str, Any] | None = None
    dates: tuple[str | None, str | None] | None = None
    notification_delay: _dt.timedelta | None = None
    batch_notifications: bool = False
    originals: bool = False
    default_excludes: tuple[str, ...] = ()
    required_fields: tuple[str, ...] = ()
    validator: Callable[[Any], Any] | tuple[Callable[[Any], Any], ...] | None = None
    #: the options a registered feature reads (its ``Feature.index_options``), by name
    extras: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def option_names(cls) -> frozenset[str]:
        """Every name a ``class Index:`` block may set: the options above and those the
        registered features declare (``Feature.index_options``). The list an unknown
        name's error gives, and the rows of the options table of the reference."""
        return (frozenset(attrs.fields_dict(cls)) - {"extras"}) | index_option_names()

    @classmethod
    def from_class(cls, model_name: str, index_cls: type | None) -> IndexOptions:
        """Read a ``class Index:`` block; unknown names raise IndexConfigurationError."""
        raw = {
            k: v for k, v in (vars(index_cls).items() if index_cls else ()) if not k.startswith("_")
        }
        known = cls.option_names()
        featured = known - set(attrs.fields_dict(cls))
        extras = {k: raw.pop(k) for k in sorted(set(raw) & featured)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise IndexConfigurationError(
                f"{model_name}.Index: unknown option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        for key in ("id_fields", "default_search_fields", "default_excludes", "required_fields"):
            value = raw.get(key)
            if isinstance(value, str):
                raise IndexConfigurationError(
                    f"{model_name}.Index.{key} must be a sequence of attribute names, "
                    f"not the string {value!r}"
                )
            if value is not None:
                raw[key] = tuple(value)
        if isinstance(raw.get("validator"), list | tuple):
            raw["validator"] = tuple(raw["validator"])
        raw.setdefault("name", _default_name(model_name))
        if "cache" in raw:
            raw["cache"] = _cache_lifetime(raw["cache"], f"{model_name}.Index.cache")
        if "dates" in raw:
            raw["dates"] = _dates(raw["dates"], f"{model_name}.Index.dates")
        if "notification_delay" in raw:
            raw["notification_delay"] = _delay(
                raw["notification_delay"], f"{model_name}.Index.notification_delay"
            )
        for key in ("batch_notifications", "originals"):
            if not isinstance(raw.get(key, False), bool):
                raise IndexConfigurationError(
                    f"{model_name}.Index.{key} must be True or False, not {raw[key]!r}"
                )
        options = cls(**raw, extras=extras)
        options.check(model_name)
        return options

    def validation_errors(self, doc: Any) -> list[str]:
        """The messages ``validator`` gives for ``doc``, in order (each validator's
        ``None`` or empty result adds none, a string adds itself, an iterable its
        strings). A message that is not a string raises ``TypeError`` naming the
        validator."""
        validators = self.validator if isinstance(self.validator, tuple) else (self.validator,)
        messages: list[str] = []
        for validator in validators:
            if validator is None:
                continue
            result = validator(doc)
            found = [] if result is None else [result] if isinstance(result, str) else result
            for message in found:
                if not isinstance(message, str):
                    raise TypeError(
                        f"Index.validator {getattr(validator, '__name__', validator)!r} "
                        f"returned {message!r}; it returns error messages (strings)"
                    )
                if message:
                    messages.append(message)
        return messages

    # the custom-field feature's options (esmapper.custom_fields._feature), read where the
    # model layer's callers always read them
    @property
    def tenant_field(self) -> Any:
        """``Index.tenant_field`` (``None``: not given)."""
        return self.extras.get("tenant_field")

    @property
    def custom_field_types(self) -> Any:
        """``Index.custom_field_types`` as given (``None``: the standard ones)."""
        return self.extras.get("custom_field_types")

    @property
    def auto_create_custom_fields(self) -> Any:
        """``Index.auto_create_custom_fields`` (``False`` unless given)."""
        return self.extras.get("auto_create_custom_fields", False)

    def check(self, model_name: str) -> None:
        where = f"{model_name}.Index"
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise IndexConfigurationError(
                f"{where}.name {self.name!r} is not a valid index name (lowercase letters, "
                "digits, '_', '-', '.')"
            )
        if self.kind not in INDEX_KINDS:
            raise IndexConfigurationError(
                f"{where}.kind {self.kind!r} is not one of {', '.join(INDEX_KINDS)}"
            )
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise IndexConfigurationError(f"{where}.version must be an integer >= 1")
        if (
            self.kind in ("daily", "monthly")
            and self.max_age is not None
            and (not isinstance(self.max_age, _dt.timedelta))
        ):
            raise IndexConfigurationError(f"{where}.max_age must be a timedelta")
        validators = self.validator if isinstance(self.validator, tuple) else (self.validator,)
        if any(v is not None and not callable(v) for v in validators):
            raise IndexConfigurationError(
                f"{where}.validator must be a callable taking the document and returning its"
                f" error messages, or a sequence of those; got {self.validator!r}"
            )
        check_reindex_scripts(self.reindex_scripts, f"{where}.reindex_scripts")
        _check_pipeline(self.pipeline, f"{where}.pipeline")


def _cache_lifetime(value: object, where: str) -> _dt.timedelta | None:
    """``Index.cache`` as a lifetime: a positive ``timedelta`` or number of seconds,
    ``True`` (:data:`DEFAULT_CACHE_LIFETIME`), ``False``/``None`` (not cached)."""
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_CACHE_LIFETIME
    if isinstance(value, int | float) and not isinstance(value, bool):
        if 0 < value < float("inf"):  # (NaN compares false)
            return _dt.timedelta(seconds=value)
    elif isinstance(value, _dt.timedelta) and value > _dt.timedelta(0):
        return value
    raise IndexConfigurationError(
        f"{where} is how long by-id reads stay cached: a positive timedelta or number of "
        "seconds (e.g. timedelta(minutes=5) or 300), True for 5 minutes, or None for not "
        f"cached; got {value!r}"
    )


def _dates(value: object, where: str) -> tuple[str | None, str | None]:
    """``Index.dates`` as ``(created, updated)`` attribute names: a pair (either ``None``),
    or ``()``/``None``/``False`` for no date tracking."""
    if value is None or value is False or value == ():
        return (None, None)
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(v is None or (isinstance(v, str) and v) for v in value)
    ):
        return (value[0], value[1])
    raise IndexConfigurationError(
        f"{where} names the (created, updated) datetime attributes the mapper sets, "
        f'e.g. ("created_at", "updated_at") (either may be None), or () for none; '
        f"got {value!r}"
    )


def _delay(value: object, where: str) -> _dt.timedelta | None:
    """``Index.notification_delay`` as a ``timedelta`` (``None``/0: immediate)."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 86400:
        return _dt.timedelta(seconds=value) if value else None
    if isinstance(value, _dt.timedelta) and _dt.timedelta(0) <= value < _dt.timedelta(days=1):
        return value or None
    raise IndexConfigurationError(
        f"{where} is how long each notification waits before it is delivered: a "
        f"timedelta or a number of seconds (0 to under a day), or None; got {value!r}"
    )


def date_fields(
    model_name: str, index: IndexOptions | None, specs: Sequence[FieldSpec], has_dates: bool
) -> tuple[str | None, str | None]:
    """The ``(created, updated)`` attributes the mapper dates: ``Index.dates`` when given,
    else ``created_utc``/``updated_utc`` of an ``em.HasDates`` model. Raises
    IndexConfigurationError for a name that is not a single datetime attribute."""
    given = None if index is None else index.dates
    if given is None:
        return ("created_utc", "updated_utc") if has_dates else (None, None)
    by_name = {spec.name: spec for spec in specs}
    for role, name in zip(("created", "updated"), given, strict=True):
        if name is None:
            continue
        spec = by_name.get(name)
        if spec is None or spec.kind != "datetime" or spec.many or not spec.stored:
            problem = "is not an attribute" if spec is None else "is not a datetime attribute"
            raise IndexConfigurationError(
                f"{model_name}.Index.dates: the {role} date {name!r} {problem} of "
                f"{model_name} (declare it as `{name}: datetime | None = None`)"
            )
    if given[0] is not None and given[0] == given[1]:
        raise IndexConfigurationError(
            f"{model_name}.Index.dates names {given[0]!r} as both the created and the updated date"
        )
    return given


def check_against_fields(model_name: str, index: IndexOptions, specs: Sequence[FieldSpec]) -> None:
    """The checks of a document model's ``class Index:`` and ``id`` that need its fields:
    ``id_fields``, ``default_excludes`` and ``required_fields`` name attributes, a
    time-series model has the datetime field that picks each document's partition, and
    ``id`` is a string. Raises IndexConfigurationError."""
    by_name = {spec.name: spec for spec in specs}
    unknown = [f for f in index.id_fields if f not in by_name]
    if unknown:
        raise IndexConfigurationError(
            f"{model_name}.Index.id_fields names unknown attribute(s): {', '.join(unknown)}"
        )
    id_spec = by_name.get("id")
    if id_spec is not None and (id_spec.kind != "str" or id_spec.many):
        raise IndexConfigurationError(
            f"{model_name}.id must be declared as a string (Elasticsearch ids are strings): "
            "keep Document's `id: str | None`, and compose ids from other attributes with "
            "Index.id_fields"
        )
    for key in ("default_excludes", "required_fields"):
        named = [
            f
            for f in getattr(index, key)
            if not isinstance(f, str) or ("*" not in f and f.split(".")[0] not in by_name)
        ]
        if named:
            raise IndexConfigurationError(
                f"{model_name}.Index.{key} names unknown attribute(s): "
                f"{', '.join(map(repr, named))}"
            )
    if index.kind in ("daily", "monthly"):
        field = index.date_field or date_fields(model_name, index, specs, True)[0] or ""
        spec = by_name.get(field)
        if spec is None or spec.kind != "datetime" or spec.many:
            given = "Index.date_field" if index.date_field else "its default date field"
            problem = "is not a field" if spec is None else "is not a datetime field"
            raise IndexConfigurationError(
                f"{model_name}.Index.kind {index.kind!r} puts each document in the partition of "
                f"a date, and {given} {field!r} {problem} of {model_name}: set "
                "Index.date_field to a datetime attribute, or derive the model from "
                "em.HasDates (created_utc)"
            )


def _check_pipeline(value: object, where: str) -> None:
    """A pipeline is a non-empty name or a definition with a list of ``processors``."""
    if value is None or (isinstance(value, str) and value.strip() == value and value):
        return
    if isinstance(value, Mapping) and isinstance(value.get("processors"), list | tuple):
        return
    raise IndexConfigurationError(
        f"{where} must be the name of an ingest pipeline or its definition "
        f'({{"processors": [...]}}), not {value!r}'
    )


def _default_name(model_name: str) -> str:
    """``snake_case`` of a class name: ``EmployeeReview`` -> ``employee_review``,
    ``HTTPLog`` -> ``http_log``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", model_name).lower()


@attrs.define(slots=True, eq=False)
class ModelInfo:
    """Everything the library needs to know about one model class (``Model.__esmapper__``)."""

    cls: type
    fields: tuple[FieldSpec, ...]
    to_source: Callable[[Any], dict[str, Any]]
    from_source: FromSource
    is_document: bool
    #: the slow paths of ``from_source``/``to_source`` for values the model does not know
    lenient: LenientCodec
    index: IndexOptions | None = None
    #: whether the mapper dates the model's documents (``created_field`` or
    #: ``updated_field`` set: ``em.HasDates``, or ``Index.dates``)
    has_dates: bool = False
    #: the attribute holding the creation date the mapper sets and corrects (``None``: none)
    created_field: str | None = None
    #: the attribute every write sets to "now" (``None``: none)
    updated_field: str | None = None
    soft_deletes: bool = False
    versioned: bool = False
    #: whether the model declares ``em.HasCustomFields``/``em.HasVirtualCustomFields``
    #: (what they mean is the custom-field feature's: :mod:`esmapper.custom_fields`)
    custom_fields: bool = False
    normalizer: Callable[[Any], None] | None = None
    field_by_name: dict[str, FieldSpec] = attrs.field(init=False)
    #: ``(name, ModelInfo)`` of the fields holding one embedded object (saves keep the
    #: undeclared keys found inside them)
    inner_fields: tuple[tuple[str, ModelInfo], ...] = attrs.field(init=False)
    properties: dict[str, Any] = attrs.field(init=False)
    _catalog: FieldCatalog | None = attrs.field(init=False, default=None)
    #: the features that apply to the model, per point (:mod:`esmapper._features`)
    points: Points = attrs.field(init=False, default=NO_POINTS)

    def __attrs_post_init__(self) -> None:
        self.field_by_name = {f.name: f for f in self.fields}
        self.inner_fields = tuple(
            (f.name, f.inner.__esmapper__)  # type: ignore[attr-defined]
            for f in self.fields
            if f.kind == "inner" and not f.many and f.stored and f.inner is not None
        )
        self.properties = {
            f.name: f.mapping for f in self.fields if f.stored and f.mapping is not None
        }
        if self.is_document:
            self.points = attach(self)

    @property
    def name(self) -> str:
        return self.cls.__name__

    def normalize(self, doc: Any) -> None:
        """Check and convert, in place, what ``doc``'s lists and embedded objects hold.

        In-place mutations (``doc.tags.append(5)``, ``doc.skills.append({...})``,
        ``doc.address.tags.append(...)``) bypass the checks an assignment runs. This runs
        them: each list item is converted like an assignment would (a dict in a
        ``list[InnerDoc]`` becomes the InnerDoc; a list keeps its identity, items are
        replaced by slice assignment), recursing into embedded objects. Raises
        DocumentValidationError naming the value (``field`` is its path, e.g.
        ``skills[2]`` or ``address.tags[0]``). A model without list or embedded fields
        returns at once; otherwise it costs a type check per list item. Every write of a
        whole document (add, save, session flush) runs it before validation.
        """
        normalizer = self.normalizer
        if normalizer is None:
            return
        try:
            normalizer(doc)
        except Invalid as exc:
            raise invalid_error(self.cls.__name__, doc, exc) from None

    @property
    def mapping(self) -> dict[str, Any]:
        """The Elasticsearch mapping body (``{"dynamic": ..., "properties": {...}}``), with
        what the model's features add (their ``mapping`` point)."""
        body: dict[str, Any] = {"properties": self.properties}
        if self.index is not None:
            body = {"dynamic": self.index.dynamic, **body}
        if self.points.mapping:  # what the features add (dynamic templates...), once, on
            body["properties"] = dict(self.properties)  # a copy: the model's stays its own
            for hook in self.points.mapping:
                hook(body)
        return body

    @property
    def catalog(self) -> FieldCatalog:
        """The field catalog that filter, sort and aggregation expressions resolve against."""
        if self._catalog is None:
            aliases = dict(self.index.aliases) if self.index else {}
            self._catalog = FieldCatalog(self.mapping, aliases=aliases)
        return self._catalog
