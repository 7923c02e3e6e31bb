"""The feature points: how a feature plugs into the core without the core naming it.

The core (the model layer, the query layer, the write pipeline ``write_documents`` ->
send -> settle, the bulk writer and the search) knows no feature by name. A feature
(custom fields, time-series placement, ingest pipelines, soft-delete bookkeeping,
routing...) is a subclass of :class:`Feature`, registered once with :func:`register`.
When a model is compiled, every registered feature is asked whether it applies
(:meth:`Feature.attach`); the model's :class:`~esmapper.model.info.ModelInfo` keeps the
instances that do (``info.points.features``) and, for each point, only the features that
implement it (``info.points``: a :class:`Points`), so a model pays nothing for a feature
it does not use, and a point no feature implements costs one empty-tuple check.

The points are the methods of :class:`Feature` below (their docstrings say who calls
them and what for), listed in :data:`POINTS` in the order a write or a search meets them;
docs/architecture.md has the table of which built-in feature implements which. A point
is implemented by overriding the method of that name; the core calls the bound methods
:class:`Points` lists (``for hook in info.points.prepare: ...``).

A feature that gives meaning to a call keyword (``tenant=``, ``soft_deletes=``) declares it
in ``call_options``: a call giving it a value that asks for the feature (any but the
feature's ``inert_values``) for a model none of whose features takes it is refused
(:func:`check_call_options`, the feature's :meth:`Feature.refuse_option`).

A feature gets what it needs through a :class:`~esmapper._context.Context` (client,
cache, bus, index specs, clock), never the whole :class:`~esmapper.mapper.Mapper`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from esmapper.errors import QueryValidationError

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "NO_POINTS",
    "POINTS",
    "Feature",
    "Points",
    "Visibility",
    "WriteCall",
    "attach",
    "call_options",
    "check_call_options",
    "index_option_names",
    "refused_call_option",
    "register",
    "registered",
    "unregister",
]

#: The names of the points, in the order a write or search meets them.
POINTS: tuple[str, ...] = (
    "mapping",
    "shares_index",
    "assign_ids",
    "prepare",
    "check",
    "shape",
    "expected_source",
    "settle",
    "change_type",
    "finish",
    "search_catalog",
    "compile_search",
    "search",
    "search_targets",
    "by_query",
    "read_params",
    "read_id",
    "stray_copies",
    "visible",
    "rebuild",
    "reads_stored",
)


@attrs.define(slots=True)
class WriteCall:
    """One call of the write pipeline as the feature points see it: the context, the
    call's :class:`~esmapper.options.Options`, the clock's "now" (aware UTC) and whether
    ``options.tenant`` is a session's (it then scopes only the models that have tenants)."""

    ctx: Context
    options: Any
    now: Any
    inherited_tenant: bool = False


@attrs.frozen(slots=True)
class Visibility:
    """What a by-id read keeps of the documents it found (:meth:`Feature.visible`):
    ``test(document)`` says whether it is visible, reading only the ``_source`` fields
    ``reads`` (``None``: the whole document; ``exists`` asks the GET for those only)."""

    test: Callable[[Any], bool]
    reads: tuple[str, ...] | None = None


class Feature:
    """A feature that plugs into the core at the named points (module docstring).

    Subclasses set ``name`` and override :meth:`attach` and the points they implement;
    the base methods do nothing and are never called (a point a feature does not override
    is not listed in :class:`Points`). One instance per model the feature applies to: it
    may keep what it compiled for that model (``self.info``)."""

    #: a short name, unique among registered features (``"custom_fields"``)
    name: ClassVar[str] = ""
    #: ``class Index:`` option names this feature reads (accepted by ``IndexOptions``)
    index_options: ClassVar[tuple[str, ...]] = ()
    #: per-call options (:class:`~esmapper.options.Options` fields) only this feature
    #: gives a meaning (``tenant``): a call of a model the feature does not apply to that
    #: gives one is refused (:func:`check_call_options`, :meth:`refuse_option`), and a
    #: session's value applies only to the models it applies to
    call_options: ClassVar[tuple[str, ...]] = ()
    #: the values of :attr:`call_options` that ask nothing of the feature (a model it does
    #: not apply to takes them: ``tenant=None``; ``soft_deletes="active"``/``"all"`` on a
    #: model whose documents are never soft-deleted)
    inert_values: ClassVar[frozenset[Any]] = frozenset({None})

    __slots__ = ("info",)

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    @classmethod
    def attach(cls, info: ModelInfo) -> Feature | None:
        """The feature's instance for ``info``'s model, or ``None`` when it does not apply.
        Raises IndexConfigurationError for options it cannot accept."""
        return None

    @classmethod
    def refuse_option(cls, info: ModelInfo, option: str) -> None:
        """Raise the error of a call of ``info``'s model (one the feature does not apply
        to) that gives ``option``, one of :attr:`call_options` (QueryValidationError)."""
        raise QueryValidationError(
            f"{option}= does not apply to {info.name} ({cls.name} only)", field=option
        )

    # -- points (override what the feature implements) --------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        """``ModelInfo.mapping``: add to the model's mapping body (``{"properties": ...}``,
        dynamic templates) in place."""

    def shares_index(self, other: ModelInfo) -> bool:
        """Registration (``Services.register``): whether this model's documents may live
        in the index of ``other``'s model, which uses the same alias (a parent/child join:
        a child and its parent); the two are otherwise refused
        (IndexConfigurationError)."""
        return False

    def assign_ids(self, call: WriteCall, pendings: Sequence[Any]) -> None:
        """Write step 1: ids of the new documents (``add``, no id, no ``id_fields``) the
        feature places (a time-series ObjectId); the core gives the rest a new ObjectId."""

    def prepare(self, call: WriteCall, pendings: Sequence[Any]) -> Any:
        """Write step 3, after the "-ing" signals and normalization, before validation:
        values the feature derives (``idx``); a return value (not ``None``) goes to
        :meth:`finish`."""
        return None

    def check(self, call: WriteCall, pendings: Sequence[Any]) -> None:
        """Write step 3, after validation, and again after ``documents_changing``
        receivers ran: refuse writes (raise) before anything is sent (the tenant rule)."""

    def shape(self, ctx: Context, actions: Sequence[Any]) -> None:
        """Complete this model's bulk actions in place, first sends and resends alike
        (``pipeline``, ``routing``)."""

    def expected_source(self, ctx: Context, action: Any, source: Any) -> Any:
        """What an applied ``create``/``index`` ``action`` (a write read back after its
        answer was lost) stores, given ``source``: what the core expects (the action's
        body, or what an earlier feature made of it). ``None``: it cannot be told (a stored
        document that differs is then not taken for another's)."""
        return source

    def settle(self, call: WriteCall, confirmed: Sequence[Any]) -> None:
        """Book-keep the confirmed writes of this model, before the "-ed" signals (the
        recently-deleted list)."""

    def change_type(self, pending: Any, original: Any, written: Any) -> Any:
        """The ``ChangeType`` the confirmed ``pending`` publishes, or ``None``: its kind's
        (:func:`esmapper._pending.change_type`). ``original``: the stored ``_source`` it
        replaced, ``written``: what it stored (a source, or the fields an update set);
        either ``None`` when not known."""
        return None

    def finish(self, call: WriteCall, state: Any, confirmed: Sequence[Any]) -> None:
        """After the write, whatever its outcome (never raising into it), with the
        state :meth:`prepare` returned and this model's confirmed writes."""

    def search_catalog(self, ctx: Context, request: Any) -> None:
        """Before a :class:`~esmapper._search.SearchRequest` compiles: may replace its
        ``catalog`` and rewrite its ``filter``, ``includes`` and ``excludes`` (as given)."""

    def compile_search(self, ctx: Context, request: Any) -> None:
        """After a search compiled, before anything is sent: raise QueryValidationError,
        or complete the request (``aggs``, ``targets``, ``scope``, ``name_highlight``)."""

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        """``(filter clauses, ids to hide)`` the feature adds to every search, count and
        by-query request of the model (tenant, soft-delete mode)."""
        return [], []

    def search_targets(self, ctx: Context, pruned: Sequence[str] | None) -> Any:
        """Where a point in time or by-query request over the model is sent: a
        :class:`~esmapper._pit.PitTarget`, or ``None`` when there is nothing to search.
        ``pruned``: the names a search's ``compile_search`` chose (``targets``)."""
        return None

    def by_query(self, ctx: Context, request: str) -> dict[str, Any] | None:
        """Parameters the feature adds to the model's by-query ``request``
        (``"update_by_query"``, ``"delete_by_query"``; ``index``: where it is sent);
        ``None``: there is nothing to write."""
        return {}

    def read_params(self, id: str) -> dict[str, Any]:
        """Request parameters of a by-id read of ``id`` (a GET, an ``_mget`` entry, a
        HEAD: :mod:`esmapper.indexes.reads`); by-id writes get theirs from :meth:`shape`.
        ``{"routing": None}``: the document has a routing ``id`` does not tell; the read
        searches for it by id on every shard instead."""
        return {}

    def read_id(self, pending: Any) -> str | None:
        """The id a real-time by-id read of the stored copy of the document ``pending``
        writes names (:mod:`esmapper._originals`): an :class:`~esmapper.ids.Id` carrying
        the routing the write itself sends, when the document tells it and its id does
        not (a child's parent id); ``None``: the document's id as it is."""
        return None

    def stray_copies(self, ctx: Context, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored hits (as a GET answers them: ``_source``, ``_seq_no``...) of the
        ``ids`` a real-time read by :meth:`read_id` missed, found elsewhere (a child stored
        under another parent, on that parent's shard: :mod:`esmapper._originals`)."""
        return []

    def visible(self, options: Any) -> Visibility | None:
        """The rule a by-id read (``get``, ``get_many``, ``exists``, a session's) under
        ``options`` applies to what it found (``None``: every document is visible). It must
        depend on ``options`` alone (not the clock, not per-call state): a repository keeps
        the rules it got per options value (``Reading._by_id_read``)."""
        return None

    def rebuild(self, ctx: Context) -> int:
        """:mod:`esmapper.indexes._idx_owed`, after a reindex whose scripts ran (or a killed
        one that owes it): bring what the feature derives in the model's stored documents
        up to date (custom-field ``idx``); returns the number of documents written."""
        return 0

    def reads_stored(self, patch: Any) -> bool:
        """:mod:`esmapper._patching` and :mod:`esmapper._by_query`: whether ``patch`` must
        be written document by document from the stored source it read, at that version
        (the feature derives what is written from the stored document, or judges the write
        by it): a ``PartialPatch`` by id then runs as a scan over its ids, and a
        ``ScriptPatch`` never as one ``_update_by_query``."""
        return False


@attrs.frozen(slots=True)
class Points:
    """Per point, the bound methods of the model's features that implement it (empty
    tuples for the rest: a point nobody implements costs the core one falsy check)."""

    features: tuple[Feature, ...] = ()
    mapping: tuple[Callable[..., Any], ...] = ()
    shares_index: tuple[Callable[..., Any], ...] = ()
    assign_ids: tuple[Callable[..., Any], ...] = ()
    prepare: tuple[Callable[..., Any], ...] = ()
    check: tuple[Callable[..., Any], ...] = ()
    shape: tuple[Callable[..., Any], ...] = ()
    expected_source: tuple[Callable[..., Any], ...] = ()
    settle: tuple[Callable[..., Any], ...] = ()
    change_type: tuple[Callable[..., Any], ...] = ()
    finish: tuple[Callable[..., Any], ...] = ()
    search_catalog: tuple[Callable[..., Any], ...] = ()
    compile_search: tuple[Callable[..., Any], ...] = ()
    search: tuple[Callable[..., Any], ...] = ()
    search_targets: tuple[Callable[..., Any], ...] = ()
    by_query: tuple[Callable[..., Any], ...] = ()
    read_params: tuple[Callable[..., Any], ...] = ()
    read_id: tuple[Callable[..., Any], ...] = ()
    stray_copies: tuple[Callable[..., Any], ...] = ()
    visible: tuple[Callable[..., Any], ...] = ()
    rebuild: tuple[Callable[..., Any], ...] = ()
    reads_stored: tuple[Callable[..., Any], ...] = ()
    #: the call options the model's features read (:attr:`Feature.call_options`)
    options: frozenset[str] = frozenset()

    @classmethod
    def of(cls, features: Sequence[Feature]) -> Points:
        hooks: dict[str, tuple[Callable[..., Any], ...]] = {}
        for point in POINTS:
            base = getattr(Feature, point)
            hooks[point] = tuple(
                getattr(f, point) for f in features if getattr(type(f), point) is not base
            )
        options = frozenset(name for f in features for name in f.call_options)
        return cls(tuple(features), **hooks, options=options)

    def feature(self, name: str) -> Feature | None:
        """The attached feature called ``name`` (``None``: it does not apply)."""
        return next((f for f in self.features if f.name == name), None)


NO_POINTS = Points()

_registry: list[type[Feature]] = []
#: ``(call option, the feature that declares it)`` of every registered feature: what
#: :func:`check_call_options` looks at on each call (one entry per option, not per feature)
_call_options: tuple[tuple[str, type[Feature]], ...] = ()
_compiled: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def registered() -> tuple[type[Feature], ...]:
    """The registered features, in registration order."""
    return tuple(_registry)


def index_option_names() -> frozenset[str]:
    """The ``class Index:`` option names the registered features read."""
    return frozenset(name for f in _registry for name in f.index_options)


def call_options() -> tuple[tuple[str, type[Feature]], ...]:
    """The ``(call option, feature)`` pairs of the registered features: a new tuple
    whenever a registration changes them, so what was worked out from one (a by-id
    read's :func:`refused_call_option`) holds while it is still this very object."""
    return _call_options


def refused_call_option(info: ModelInfo, options: Any) -> tuple[str, type[Feature]] | None:
    """The per-call option (``tenant``, ``soft_deletes="deleted"``) ``options`` give that
    only a feature which does not apply to ``info``'s model reads (a value outside that
    feature's ``inert_values``), with that feature; ``None``: the call may run. It depends
    on ``options``, the model's points and :func:`call_options` alone."""
    for name, feature in _call_options:
        if name not in info.points.options and getattr(options, name, None) not in (
            feature.inert_values
        ):
            return name, feature
    return None


def check_call_options(info: ModelInfo, options: Any) -> None:
    """Refuse a call of ``info``'s model that gives a per-call option (``tenant``,
    ``soft_deletes="deleted"``) only a feature that does not apply to it reads (that
    feature's :meth:`~Feature.refuse_option` error, a QueryValidationError; see
    :func:`refused_call_option`). Sends nothing."""
    refused = refused_call_option(info, options)
    if refused is not None:
        refused[1].refuse_option(info, refused[0])


def attach(info: ModelInfo) -> Points:
    """The points of ``info``'s model: every registered feature that applies to it.
    Called when the model is compiled; a feature registered later is attached to the
    models compiled before (:func:`register`)."""
    with _lock:
        _compiled.add(info)
        features = [f for f in (cls.attach(info) for cls in _registry) if f is not None]
    return Points.of(features) if features else NO_POINTS


def register(feature: type[Feature]) -> type[Feature]:
    """Register ``feature`` (usable as a class decorator). Models compiled before are
    attached to it now. Registering a name twice raises ``ValueError``."""
    global _call_options  # noqa: PLW0603 - a new tuple whenever it changes: see call_options
    if not feature.name:
        raise ValueError(f"{feature.__qualname__} has no name")
    with _lock:
        if any(f.name == feature.name for f in _registry):
            raise ValueError(f"a feature named {feature.name!r} is registered already")
        _registry.append(feature)
        _call_options = (*_call_options, *((name, feature) for name in feature.call_options))
        earlier = list(_compiled)
    for info in earlier:
        instance = feature.attach(info)
        if instance is not None:
            info.points = Points.of([*info.points.features, instance])
    return feature


def unregister(feature: type[Feature]) -> None:
    """Remove ``feature`` from the registry and from the models it was attached to (for
    tests that register a feature of their own)."""
    global _call_options  # noqa: PLW0603 - a new tuple whenever it changes: see call_options
    with _lock:
        _registry.remove(feature)
        _call_options = tuple(entry for entry in _call_options if entry[1] is not feature)
        earlier = list(_compiled)
    for info in earlier:
        kept = [f for f in info.points.features if type(f) is not feature]
        if len(kept) != len(info.points.features):
            info.points = Points.of(kept) if kept else NO_POINTS
