"""Parent/child documents in one index (Elasticsearch's ``join`` field), as a feature of the
core (:mod:`esmapper._features`): the one owner of the join rule, whose points every path
goes through.

A parent model names the join field; a child model names its parent model and the
attribute holding its parent's id, and shares the parent's index::

    class Organization(em.Document):
        class Index:
            name = "organizations"
            join_field = "relation"

    class Employee(em.Document):
        class Index:
            name = "organizations"          # the parent's index (same name, version...)
            parent = Organization
            parent_field = "organization_id"

        organization_id: str | None = em.field(em.Keyword(), default=None)

The relation names are the models' default index names (``organization``, ``employee``).
What each point does:

- ``attach``: the options are checked (:class:`~esmapper.errors.IndexConfigurationError`
  naming the option): the join field is not a field of the parent; the child's index is
  the parent's (name, version, kind, settings, dynamic; not time-series: a join lives in
  one index), the same updated date field or none (a version bump's catch-up reads
  that field), its ``parent_field`` is a ``str`` field, its fields do not map a name the
  parent (or a sibling) maps differently; one level (a parent is not a child); no
  ``routing_field`` on either; a child's ``parent_field`` joins its
  ``Index.required_fields`` (a child found without it could not be saved: it is the routing);
- ``shares_index``: a mapper takes the parent and its children on one alias;
- ``mapping``: both models give the same mapping, the index's
  (:meth:`ParentJoin.index_mapping`): the parent's and every child's properties and what
  their other features add (custom fields' ``idx`` and dynamic templates), and
  ``{"<join>": {"type": "join", "relations": {parent: children}}}``
  (one child as a string, as Elasticsearch echoes it; children must be declared before
  the index is created: their fields are the index's);
- ``check``: a child written without a parent id (add, save) is refused, and a removal or
  patch by id of a child that gives no routing (a plain ``str`` id, not an
  :class:`~esmapper.ids.Id` with ``routing=``, no document, no scanned source), before
  anything is sent (:class:`~esmapper.errors.DocumentValidationError`); a patch that moves
  a stored child to another parent too (a client-side patch changing the parent field, a
  ``PartialPatch`` setting it), a save that moves one whose stored version is not known,
  and a save with ``originals=False`` of a child not loaded (its stored copy, maybe under
  another parent, would not be looked up);
- ``prepare``/``finish``: a save that moves a stored child to another parent (the stored
  copy, loaded or read by the originals read, names another parent) is a move: the new
  copy written, then the old one deleted on the old parent's shard, conditioned on the
  version it was read at (:meth:`ChildJoin.finish`); a child model reads the originals of
  saves of documents not loaded by default (``Index.originals``), so a copy under another
  parent is found;
- ``shape``: ``create``/``index`` actions get the join value in their ``_source``
  (``"organization"``; ``{"name": "employee", "parent": <id>}``), a child's every action
  the routing of its parent id (``expected_source``: the read-back of a lost answer
  expects that ``_source``);
- ``read_params``: a child's by-id read (GET, ``_mget`` entry, HEAD) routes with its
  ``Id``'s routing; without one, ``{"routing": None}``: the read finds it with a search by
  id on every shard instead (near-real-time: :mod:`esmapper.indexes.reads`);
- ``search_catalog``: the filter language of a parent takes ``<child relation>:(expr)``
  (``has_child``), a child's ``<parent relation>:(expr)`` (``has_parent``), ``expr`` in
  the other model's language (a field of that name wins);
- ``search``: every search, count and by-query request of a model is limited to its own
  relation (:func:`relation_clause`: a parent's repository returns parents only), and
  a child's, while the soft-delete mode is ``"active"`` and the parent
  model has soft deletes, to the children of a parent not soft-deleted
  (``has_parent`` of ``is_deleted: false``: a soft-deleted parent hides its children in
  default reads; restored, they show again; an unrefreshed search also hides the children
  of parents on the recently-deleted list). By-id reads of a child do not look at its
  parent;
- ``visible``: every by-id read (``get``, ``get_many``, ``exists``, a session's reads,
  a cached entry, the originals read) of a model finds only the documents of its own
  relation (:func:`relation_rule`: a child's repository given a parent's id finds
  nothing, and the other way round).

- ``compile_search``: every ``has_child``/``has_parent`` of a search's query carries
  the other model's default clauses (:func:`with_defaults`: the tenant of ``tenant=``).

The queries across the join (:func:`has_child`, :func:`has_parent`, :func:`parent_id`;
``em.has_child``...) are at the end of the module.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import attrs
from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Bool, MatchAll, Query

from esmapper._features import Feature, Visibility, register
from esmapper._join_moves import delete_old_copies, prepare_moves, shape_moves
from esmapper._join_recent import RecentRoutings
from esmapper._pending import source_value
from esmapper._server_mapping import server_fields
from esmapper._soft_deletes import recently_deleted
from esmapper.errors import DocumentValidationError, IndexConfigurationError, QueryValidationError
from esmapper.ids import Id, routing_of
from esmapper.indexes.reads import get_documents
from esmapper.model.catalog import FieldCatalog
from esmapper.model.state import state_of
from esmapper.query.filter import compile_filter

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._features import WriteCall
    from esmapper._pending import PendingWrite
    from esmapper.bulk import BulkAction
    from esmapper.model.info import ModelInfo

__all__ = [
    "ChildJoin",
    "ParentJoin",
    "has_child",
    "has_parent",
    "join_of",
    "parent_id",
    "relation_clause",
    "relation_name",
    "relation_rule",
    "with_defaults",
]

_log = logging.getLogger("esmapper.join")

_JOIN = "join_field"
_PARENT = "parent"
_PARENT_FIELD = "parent_field"
_RELATION = "relation"
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def relation_name(info: ModelInfo) -> str:
    """The relation name of ``info``'s model in the join: its ``Index.relation`` when it
    sets one, else its class name in ``snake_case`` (``EmployeeReview`` ->
    ``employee_review``). Stored in every document's join value and in the index mapping,
    it must stay the same across a version bump (a class renamed for the new version sets
    ``relation`` to the old name). Raises IndexConfigurationError for a ``relation`` that
    is not a name (letters, digits and ``_``: the filter language's ``<relation>:(...)``)."""
    index = info.index
    given = None if index is None else index.extras.get(_RELATION)
    if given is None:
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", info.name).lower()
    if not isinstance(given, str) or not _FIELD_NAME.match(given):
        raise IndexConfigurationError(
            f"{info.name}.Index.{_RELATION} must be a name (letters, digits and _), not {given!r}"
        )
    return given


def join_of(model: Any) -> ParentJoin | ChildJoin | None:
    """The join feature of ``model`` (a document class or its ``ModelInfo``), ``None`` when
    it is neither a parent nor a child of a join."""
    info = getattr(model, "__esmapper__", model)
    points = getattr(info, "points", None)
    if points is None:
        return None
    found = points.feature("join_parent") or points.feature("join_child")
    return found if isinstance(found, ParentJoin | ChildJoin) else None


@register
class ParentJoin(Feature):
    """A parent model: ``class Index: join_field = "<name>"``."""

    name = "join_parent"
    index_options = (_JOIN, _RELATION)
    __slots__ = ("children", "field", "relation", "rule")

    def __init__(self, info: ModelInfo, field: str) -> None:
        super().__init__(info)
        #: the join field's name, the parent's relation name and its children by relation
        self.field, self.relation = field, relation_name(info)
        self.children: dict[str, ChildJoin] = {}
        #: the by-id reads' rule (:meth:`visible`)
        self.rule = relation_rule(field, self.relation)

    @classmethod
    def attach(cls, info: ModelInfo) -> ParentJoin | None:
        index = info.index
        if index is None or _JOIN not in index.extras:
            return None
        field = index.extras[_JOIN]
        where = f"{info.name}.Index.{_JOIN}"
        if not isinstance(field, str) or not _FIELD_NAME.match(field):
            raise IndexConfigurationError(f"{where} must be a field name, not {field!r}")
        if field in info.field_by_name or field in info.properties:
            raise IndexConfigurationError(
                f"{where} {field!r} is a field of {info.name}: the join field holds the "
                "relation esmapper writes, name one no model declares"
            )
        if _PARENT in index.extras:
            raise IndexConfigurationError(
                f"{info.name}.Index sets both {_JOIN} and {_PARENT}: one level of "
                "parent/child only (a child is not a parent)"
            )
        if "routing_field" in index.extras:
            raise IndexConfigurationError(
                f"{info.name}.Index sets routing_field and {_JOIN}: its children are routed by "
                "its id (Elasticsearch's default routing of a parent)"
            )
        if index.kind not in ("versioned", "plain"):
            raise IndexConfigurationError(
                f"{where} needs one index (kind 'versioned' or 'plain'), not {index.kind!r}: "
                "a parent and its children live in the same index"
            )
        return cls(info, field)

    def adopt(self, child: ChildJoin) -> None:
        """Register ``child`` (its :meth:`ChildJoin.attach`); a class of the same module and
        name replaces the one it redefines. Raises IndexConfigurationError for a relation
        name or a field mapping that clashes."""
        relation = child.relation
        known = self.children.get(relation)
        if known is not None and not _same_class(known.info.cls, child.info.cls):
            raise IndexConfigurationError(
                f"{child.info.name} and {known.info.name} are both children "
                f"{relation!r} of {self.info.name}"
            )
        if relation == self.relation:
            raise IndexConfigurationError(
                f"{child.info.name}'s relation name {relation!r} is its parent's"
            )
        others = {**self.info.properties}
        for name, other in self.children.items():
            if name != relation:
                others.update(other.info.properties)
        for name, mapping in child.info.properties.items():
            if name == self.field:
                raise IndexConfigurationError(
                    f"{child.info.name}.{name} is {self.info.name}'s join field"
                )
            if name in others and others[name] != mapping:
                raise IndexConfigurationError(
                    f"{child.info.name}.{name} maps {mapping!r}, but the index "
                    f"{self.info.index.name!r} maps {name!r} as {others[name]!r}: fields of "  # type: ignore[union-attr]
                    "one name in a parent/child index must map the same"
                )
        self.children[relation] = child

    def index_mapping(self) -> dict[str, Any]:
        """The index's mapping body, the one the parent and every child give: each model's
        own body (its properties and what its other features add, custom fields' ``idx``
        and dynamic templates...) merged, and the join field. Raises
        IndexConfigurationError for a dynamic template of one name two models map
        differently."""
        body = _own_mapping(self.info)
        templates: list[dict[str, Any]] = list(body.get("dynamic_templates") or ())
        for child in self.children.values():
            theirs = _own_mapping(child.info)
            body["properties"] = {**theirs["properties"], **body["properties"]}
            known = {name: entry for template in templates for name, entry in template.items()}
            for template in theirs.get("dynamic_templates") or ():
                for name, entry in template.items():
                    if name not in known:
                        templates.append(template)
                    elif known[name] != entry:
                        raise IndexConfigurationError(
                            f"{child.info.name}'s dynamic template {name!r} maps {entry!r}, "
                            f"another model of the index {self.info.name} shares maps "
                            f"{known[name]!r}: a parent/child index has one mapping"
                        )
        if templates:
            body["dynamic_templates"] = templates
        children: str | list[str] = sorted(self.children)
        if len(children) == 1:  # as Elasticsearch echoes one child: the stored mapping matches
            children = children[0]
        body["properties"][self.field] = {"type": "join", "relations": {self.relation: children}}
        return body

    def join_value(self, source: Any) -> Any:
        return self.relation

    # -- model (points: mapping, shares_index) --------------------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        _replace(body, self.index_mapping())

    def shares_index(self, other: ModelInfo) -> bool:
        """Its index, shared with its children."""
        join = join_of(other)
        return isinstance(join, ChildJoin) and join.parent is self

    # -- writes (points: shape, expected_source) ------------------------------------------

    def shape(self, ctx: Context, actions: Sequence[BulkAction]) -> None:
        _put_join(self, actions)

    def expected_source(self, ctx: Context, action: Any, source: Any) -> Any:
        return _expected(self, source)

    # -- search (points: search_catalog, search) -------------------------------------------

    def search_catalog(self, ctx: Context, request: Any) -> None:
        """``<child relation>:(expr)`` in the filter language: :func:`has_child` of ``expr``
        in that child model's language."""
        for relation, child in self.children.items():
            request.subqueries[relation] = partial(_sub_query, ctx, child, request.options.tenant)

    def compile_search(self, ctx: Context, request: Any) -> None:
        """The ``has_child`` queries of the search carry their model's default clauses
        (:func:`with_defaults`: a tenant's search matches through its children only)."""
        if request.query is not None:
            request.query = with_defaults(ctx, _inner_options(request), self, request.query)

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        """Parents only: :func:`relation_clause`."""
        return [relation_clause(self.field, self.relation)], []

    # -- reads (point: visible) -----------------------------------------------------------

    def visible(self, options: Any) -> Visibility:
        """By id: a parent only (:func:`relation_rule`)."""
        return self.rule


@register
class ChildJoin(Feature):
    """A child model: ``class Index: parent = <parent model>; parent_field = "<attr>"``."""

    name = "join_child"
    index_options = (_PARENT, _PARENT_FIELD, _RELATION)
    __slots__ = ("parent", "parent_field", "relation", "rule")

    def __init__(self, info: ModelInfo, parent: ParentJoin, parent_field: str) -> None:
        super().__init__(info)
        #: the parent's join feature, the attribute holding the parent id, the relation name
        self.parent, self.parent_field = parent, parent_field
        self.relation = relation_name(info)
        #: the by-id reads' rule (:meth:`visible`)
        self.rule = relation_rule(parent.field, self.relation)

    @classmethod
    def attach(cls, info: ModelInfo) -> ChildJoin | None:
        index = info.index
        if index is None or (_PARENT not in index.extras and _PARENT_FIELD not in index.extras):
            if index is not None and _RELATION in index.extras and _JOIN not in index.extras:
                raise IndexConfigurationError(
                    f"{info.name}.Index.{_RELATION} names the model's relation in a "
                    f"parent/child join: set {_JOIN} (a parent) or {_PARENT} (a child) too"
                )
            return None
        where = f"{info.name}.Index"
        model, field = index.extras.get(_PARENT), index.extras.get(_PARENT_FIELD)
        parent = join_of(model) if isinstance(model, type) else None
        if not isinstance(parent, ParentJoin):
            raise IndexConfigurationError(
                f"{where}.{_PARENT} must be a document model whose Index sets {_JOIN}, "
                f"not {model!r}"
            )
        spec = info.field_by_name.get(field) if isinstance(field, str) else None
        if spec is None or spec.kind != "str" or spec.many or not spec.stored:
            raise IndexConfigurationError(
                f"{where}.{_PARENT_FIELD} must name a str field of {info.name} holding the "
                f"parent's id, not {field!r}"
            )
        mine, theirs = index, parent.info.index
        assert theirs is not None  # a parent has an index
        if (mine.name, mine.version, mine.kind) != (theirs.name, theirs.version, theirs.kind):
            raise IndexConfigurationError(
                f"{where} must be the index of its parent {parent.info.name} (name "
                f"{theirs.name!r}, version {theirs.version}, kind {theirs.kind!r}): a parent "
                f"and its children live in one index; got name {mine.name!r}, version "
                f"{mine.version}, kind {mine.kind!r}"
            )
        for option in ("settings", "dynamic"):
            if getattr(mine, option) != getattr(theirs, option):
                raise IndexConfigurationError(
                    f"{where}.{option} must be its parent's ({parent.info.name}.Index.{option} "
                    f"= {getattr(theirs, option)!r}): whichever model writes first creates their "
                    f"one index; got {getattr(mine, option)!r}"
                )
        if info.updated_field != parent.info.updated_field:
            # a version bump catches up by the updated date field: a document of the index
            # without it (or with another one), written during the copy, would not be copied
            raise IndexConfigurationError(
                f"{info.name} and its parent {parent.info.name} must date their writes in the "
                f"same field (em.HasDates or Index.dates; got {info.updated_field!r} and "
                f"{parent.info.updated_field!r}): a version bump of their one index catches "
                "up on the documents written during the copy by that field"
            )
        if "routing_field" in index.extras:
            raise IndexConfigurationError(
                f"{where} sets routing_field and {_PARENT}: a child is routed by its parent id"
            )
        field = str(field)
        if field not in index.required_fields:
            # loaded whatever a search's includes/excludes or Index.default_excludes say:
            # a child found without its parent id could not be saved (no routing)
            info.index = attrs.evolve(index, required_fields=(*index.required_fields, field))
        # a save of a child not loaded reads its stored copy first (in real time on the
        # shard of the parent it names, else by id on every shard): a copy under another
        # parent is then known, and moved (see prepare/finish), not left beside the new one
        info.index = attrs.evolve(info.index or index, originals=True)
        child = cls(info, parent, field)
        parent.adopt(child)
        return child

    @property
    def field(self) -> str:
        """The join field's name (the parent's)."""
        return self.parent.field

    def parent_id(self, doc: Any) -> Any:
        return getattr(doc, self.parent_field, None)

    def join_value(self, source: Any) -> Any:
        return {"name": self.relation, "parent": source.get(self.parent_field)}

    def routing(self, pending: PendingWrite) -> str | None:
        """The routing of ``pending``: its document's parent id, else its id's routing
        (:class:`~esmapper.ids.Id`), else the parent id of the source it read (a scan)."""
        if pending.doc is not None:  # (a removal by id: a document of only its id)
            parent = self.parent_id(pending.doc) or routing_of(pending.doc.id)
        else:
            parent = routing_of(pending.id) or pending.stored_value(self.parent_field)
        return parent if isinstance(parent, str) and parent else None

    # -- model (points: mapping, shares_index) --------------------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        _replace(body, self.parent.index_mapping())

    def shares_index(self, other: ModelInfo) -> bool:
        """Its parent's index, shared with the parent and its other children."""
        join = join_of(other)
        return join is self.parent or (isinstance(join, ChildJoin) and join.parent is self.parent)

    # -- writes (points: check, shape, expected_source) -----------------------------------

    def check(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """Refuse a child without a parent id, a removal or patch by id without a routing,
        a patch that moves a stored child to another parent, a move whose old copy's
        version is not known and a save with ``originals=False`` of a child not loaded;
        before anything is sent."""
        name, field = self.info.name, self.parent_field
        for pending in pendings:
            form = pending.form
            changes = getattr(form.patch, "doc", None) if form is not None else None
            if isinstance(changes, Mapping) and field in changes:
                raise DocumentValidationError(
                    f"a patch of {name} sets {field}: a child stays with its parent (its "
                    "stored copy is on that parent's shard); remove it and add it again",
                    field=field,
                )
            if pending.doc is None and pending.id is None:
                continue  # a patch judged before anything is read (check_patch)
            routing = self.routing(pending)
            if routing is None:
                if pending.doc is not None and pending.kind != "remove":
                    raise DocumentValidationError(
                        f"{name} {pending.doc.id!r} has no parent: set {field} to the id of "
                        f"its {self.parent.info.name} (a child is stored with its parent)",
                        field=field,
                    )
                id = str.__str__(pending.doc_id or "")
                raise DocumentValidationError(
                    f"{pending.kind} of {name} {id!r} by id needs its parent's id: "
                    f"pass em.Id({id!r}, routing=<{field}>) or the document",
                    field=field,
                )
            if (
                pending.kind == "save"
                and call.options.originals is False
                and pending.original_as_held is None
            ):
                raise DocumentValidationError(
                    f"a save of {name} {pending.doc.id!r} not loaded with originals=False: "
                    "its stored copy (maybe under another parent, on another shard) would "
                    "not be looked up and could stay beside the new one; save it with "
                    "originals=True (a child's default) or load it first",
                    field=field,
                )
            move = self._move(pending)
            state = None if pending.doc is None else state_of(pending.doc)
            if move is not None and pending.kind == "save" and state is not None and state.partial:
                raise DocumentValidationError(
                    f"{name} {pending.doc.id!r} moves from {field} {move[0]!r} to {routing!r} "
                    "but was loaded in part (includes=/excludes=): its save would update "
                    "the fields it changed on the new parent's shard, where no copy is "
                    f"stored; load it whole (get em.Id({str(pending.doc.id)!r}, "
                    f"routing={move[0]!r})) and save that",
                    field=field,
                )
            if move is not None and (pending.kind != "save" or move[1] is None):
                how = (
                    "a patch cannot move a child: save the document"
                    if pending.kind != "save"
                    else "the version of its stored copy is not known, so that copy could "
                    f"not be deleted: load it first (get em.Id({str(pending.doc.id)!r}, "
                    f"routing={move[0]!r})) or save it with originals=True"
                )
                raise DocumentValidationError(
                    f"{name} {pending.doc.id!r} moves from {field} {move[0]!r} to "
                    f"{routing!r}: its stored copy is on the old parent's shard and {how}",
                    field=field,
                )

    def _move(self, pending: PendingWrite) -> tuple[str, tuple[int, int, str | None] | None] | None:
        """``(old parent id, (seq_no, primary_term, index) of the stored copy or None)``
        when ``pending`` writes a stored child under another parent than the stored copy
        names (known: the document was loaded, or its original read), else ``None``."""
        if pending.doc is None or pending.kind in ("add", "remove"):
            return None
        stored, routing = pending.stored_value(self.parent_field), self.routing(pending)
        if not isinstance(stored, str) or routing is None or stored == routing:
            return None
        if pending.read_original is not None:  # read by the originals read
            return stored, pending.read_condition
        state = state_of(pending.doc)
        if state is None or state.condition is None:
            return stored, None
        _, seq_no, primary_term = state.condition
        return stored, (seq_no, primary_term, state.index)

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> Any:
        """The saves that move a stored child to another parent (:mod:`esmapper._join_moves`:
        where its old copy is, whether the new routing lands on its shard; two real-time
        ``_mget`` when a batch moves one), for :meth:`shape` and :meth:`finish`; ``None``
        when there is none. Raises VersionConflictError before anything is sent when the
        old copy of a ``Versioned`` save changed since it was loaded."""
        found = []
        for pending in pendings:
            move = self._move(pending) if pending.kind == "save" else None
            if move is not None and move[1] is not None:
                found.append((pending, move[0], move[1]))
        if not found:
            return None
        return prepare_moves(call, call.ctx.spec(self.info.cls), found, self.routing) or None

    def finish(self, call: WriteCall, state: Any, confirmed: Sequence[PendingWrite]) -> None:
        """Delete the old copy of every child moved to another shard once its new copy is
        stored (:func:`~esmapper._join_moves.delete_old_copies`: routed by the old parent
        id, conditioned on the old copy's version; a refusal logged, never raised), then
        drop their cache entries again (a read of the old copy may have cached it
        meanwhile). The new copy first: a process killed between the two leaves both
        copies (nothing is lost; the old one is then found by a search by id, beside the
        new)."""
        if not state:
            return
        ids = delete_old_copies(call, call.ctx.spec(self.info.cls), state, confirmed)
        if ids:
            call.ctx.invalidate_ids(self.info, ids)

    def shape(self, ctx: Context, actions: Sequence[BulkAction]) -> None:
        """Every action routed by its parent id, the join value in the sources, and the
        new copy of a child moved to another shard not conditioned on its old copy's
        version (:func:`~esmapper._join_moves.shape_moves`)."""
        for action in actions:
            action.routing = self.routing(action.ref)
        _put_join(self, actions)
        shape_moves(ctx, actions)

    def expected_source(self, ctx: Context, action: Any, source: Any) -> Any:
        return _expected(self, source)

    # -- reads (points: read_params, visible, read_id) -------------------------------------

    def read_params(self, id: str) -> dict[str, Any]:
        """``{"routing": <the Id's>}``; ``{"routing": None}`` for an id without one (the
        read searches by id: :mod:`esmapper.indexes.reads`)."""
        return {"routing": routing_of(id)}

    def visible(self, options: Any) -> Visibility:
        """By id: a child of this relation only (:func:`relation_rule`)."""
        return self.rule

    def read_id(self, pending: PendingWrite) -> str | None:
        """The document's id with the routing its write sends (the originals read of a
        child saved without being loaded finds it on its parent's shard, in real time)."""
        routing = self.routing(pending)
        return None if routing is None else Id(str(pending.doc.id), routing=routing)

    def stray_copies(self, ctx: Context, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored copies of the ``ids`` (each an :class:`~esmapper.ids.Id` routed by
        the parent its save names) that their real-time read did not find on that
        parent's shard: in real time where this process last wrote each
        (:class:`~esmapper._join_recent.RecentRoutings`, a routed ``_mget``), the rest
        by id on every shard (a search, as the index was last refreshed: no refresh is
        sent, a new child, the common miss, costs one search)."""
        spec = ctx.spec(self.info.cls)
        recent = ctx.extension(self.name, RecentRoutings)
        elsewhere: list[str] = []
        for id in ids:
            routing = recent.get(spec.alias, str.__str__(id))
            if routing is not None and routing != routing_of(id):
                elsewhere.append(Id(str.__str__(id), routing=routing))
        hits = get_documents(ctx.client, spec, elsewhere) if elsewhere else []
        found = {str(h["_id"]) for h in hits}
        rest = [str.__str__(id) for id in ids if str.__str__(id) not in found]
        return hits + get_documents(ctx.client, spec, rest) if rest else hits

    def settle(self, call: WriteCall, confirmed: Sequence[PendingWrite]) -> None:
        """Remember where each confirmed write put its child (its routing; a removal:
        forgotten), for :meth:`stray_copies`."""
        if not confirmed:
            return
        alias = call.ctx.spec(self.info.cls).alias
        recent = call.ctx.extension(self.name, RecentRoutings)
        for pending in confirmed:
            id = pending.doc.id if pending.doc is not None else pending.id
            if id is None or (pending.kind == "patch" and pending.doc is None):
                continue
            routing = None if pending.kind == "remove" else self.routing(pending)
            recent.written(alias, str.__str__(id), routing)

    # -- search (points: search_catalog, search) -------------------------------------------

    def search_catalog(self, ctx: Context, request: Any) -> None:
        """``<parent relation>:(expr)`` in the filter language: :func:`has_parent` of
        ``expr`` in the parent model's language."""
        request.subqueries[self.parent.relation] = partial(
            _sub_query, ctx, self.parent, request.options.tenant
        )

    def compile_search(self, ctx: Context, request: Any) -> None:
        """The ``has_parent`` queries of the search carry the parent model's default
        clauses (:func:`with_defaults`: a tenant's search matches through its parents
        only)."""
        if request.query is not None:
            request.query = with_defaults(ctx, _inner_options(request), self.parent, request.query)

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        """This relation's documents; with the parent model's soft deletes and the mode
        ``"active"``, only the children of a parent not soft-deleted (and, in a search that
        does not refresh, not of a parent soft-deleted in the last seconds: the shared
        recently-deleted list, as the soft-delete feature hides the parents themselves)."""
        clauses: list[Any] = [relation_clause(self.field, self.relation)]
        if self.parent.info.soft_deletes and options.soft_deletes == "active":
            clauses.append(
                {
                    "has_parent": {
                        "parent_type": self.parent.relation,
                        "query": {"term": {"is_deleted": False}},
                    }
                }
            )
            # parents soft-deleted moments ago, which an unrefreshed search still sees
            gone = (
                recently_deleted(ctx, self.parent.info) if options.consistency == "eventual" else []
            )
            if gone:
                clauses.append({"bool": {"must_not": [{"terms": {self.parent_field: gone}}]}})
        return clauses, []


def relation_clause(field: str, relation: str) -> dict[str, Any]:
    """The filter clause of the documents of one relation of the join field ``field``,
    the one every search, count and by-query request of a model of the join gets:
    ``{"bool": {"should": [{"term": {"<join>": "<relation>"}}, {"term": {"<join>.name":
    "<relation>"}}], "minimum_should_match": 1}}``.

    Why two terms: Elasticsearch's join mapper indexes the relation name in the join
    field itself, for a parent (``"company"``) and a child (``{"name": "worker", "parent":
    ...}``) alike, so the first term matches both; ``<join>.name`` is no mapped field
    there (a term on it matches nothing, no error). The local server (noida-db) indexes
    the ``_source`` literally: a parent's string matches the first term, a child's object
    only ``<join>.name``. Each server matches exactly the documents of the relation."""
    return {
        "bool": {
            "should": [{"term": {field: relation}}, {"term": {f"{field}.name": relation}}],
            "minimum_should_match": 1,
        }
    }


def relation_rule(field: str, relation: str) -> Visibility:
    """The rule every by-id read of a model of the join applies (its ``visible`` point:
    ``get``, ``get_many``, ``exists``, a session's reads, cached entries, the originals
    read): a document whose stored join value (``"<parent relation>"`` or ``{"name":
    "<child relation>", ...}``) names another relation is not found, as the searches'
    :func:`relation_clause` does not find it. The join value is read from the loaded
    ``_source`` (:class:`~esmapper.model.state.DocState`; ``exists`` asks the GET for
    that field only); a document without one (built in memory, or loaded by a search
    limited by ``includes=``, which its relation clause already chose) is not judged."""

    def test(doc: Any) -> bool:
        state = state_of(doc)
        if state is None:
            return True
        value = source_value(state.original_or_bytes, field)
        if isinstance(value, Mapping):
            value = value.get("name")
        return value is None or value == relation

    return Visibility(test, (field,))


def _put_join(join: ParentJoin | ChildJoin, actions: Sequence[BulkAction]) -> None:
    """The join value in the ``_source`` of the ``create``/``index`` actions."""
    field = join.field
    for action in actions:
        if action.op in ("create", "index") and action.body is not None:
            body = action.body
            action.body = {**body, field: join.join_value(body)}


def _expected(join: ParentJoin | ChildJoin, source: Any) -> Any:
    if source is None:
        return None
    return {**source, join.field: join.join_value(source)}


def _own_mapping(info: ModelInfo) -> dict[str, Any]:
    """``info``'s mapping body without the join: its properties and what its other
    features' ``mapping`` points add."""
    assert info.index is not None
    body: dict[str, Any] = {"dynamic": info.index.dynamic, "properties": dict(info.properties)}
    for hook in info.points.mapping:
        if not isinstance(getattr(hook, "__self__", None), ParentJoin | ChildJoin):
            hook(body)
    return body


def _replace(body: dict[str, Any], index: dict[str, Any]) -> None:
    body.clear()
    body.update(index)


def _same_class(a: type, b: type) -> bool:
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


# -- the queries across the join: em.has_child, em.has_parent, em.parent_id ---------------
#
# DSL queries for filter= of any search of the other side (find, count, exists, patch_all...),
# alone or combined with &, | and ~. The inner filter is the other model's filter language
# (or a DSL query), resolved against that model's fields, with that model's soft-delete
# clause in the mode soft_deletes ("active", the default: a soft-deleted child does not make
# its parent match, a soft-deleted parent does not make its children match; "all": no
# clause; "deleted": the deleted ones, for a model with soft deletes). Nothing is sent when
# they are built.


_MODES = ("active", "all", "deleted")
_SCORE_MODES = ("none", "avg", "sum", "max", "min")


def has_child(
    child: type,
    filter: str | Query | None = None,
    *,
    score_mode: Literal["none", "avg", "sum", "max", "min"] | None = None,
    min_children: int | None = None,
    max_children: int | None = None,
    soft_deletes: Literal["active", "all", "deleted"] = "active",
) -> Query:
    """Parents having a ``child`` (a child model) that matches ``filter``:
    ``{"has_child": {"type": "<child relation>", "query": ..., "score_mode"?,
    "min_children"?, "max_children"?}}``. ``min_children``/``max_children`` bound how many
    of its children must match (ints >= 1, min <= max: ``ValueError`` otherwise). Sends
    nothing; raises ``TypeError`` for a model that is not a child, QueryValidationError for
    a bad filter (or ``is_deleted`` named while ``soft_deletes="active"``)."""
    join = _join(child, ChildJoin, "has_child", "a child model (Index.parent)")
    params: dict[str, Any] = {"type": join.relation, "query": _inner(join, filter, soft_deletes)}
    if score_mode is not None:
        if score_mode not in _SCORE_MODES:
            raise ValueError(
                f"score_mode must be one of {', '.join(_SCORE_MODES)}, not {score_mode!r}"
            )
        params["score_mode"] = score_mode
    for name, value in (("min_children", min_children), ("max_children", max_children)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, not {value!r}")
            params[name] = value
    if min_children is not None and max_children is not None and min_children > max_children:
        raise ValueError(f"min_children {min_children} is over max_children {max_children}")
    return Q("has_child", **params)


def has_parent(
    parent: type,
    filter: str | Query | None = None,
    *,
    score: bool | None = None,
    soft_deletes: Literal["active", "all", "deleted"] = "active",
) -> Query:
    """Children whose parent (of the parent model ``parent``) matches ``filter``:
    ``{"has_parent": {"parent_type": "<parent relation>", "query": ..., "score"?}}``
    (``score``: the parent's relevance score becomes the child's). Sends nothing; raises
    ``TypeError`` for a model that is not a parent, QueryValidationError for a bad
    filter."""
    join = _join(parent, ParentJoin, "has_parent", "a parent model (Index.join_field)")
    params: dict[str, Any] = {
        "parent_type": join.relation,
        "query": _inner(join, filter, soft_deletes),
    }
    if score is not None:
        params["score"] = bool(score)
    return Q("has_parent", **params)


def parent_id(child: type, id: str) -> Query:
    """The children of model ``child`` whose parent is ``id``:
    ``{"parent_id": {"type": "<child relation>", "id": id}}`` (an :class:`~esmapper.ids.Id`
    counts as its value)."""
    join = _join(child, ChildJoin, "parent_id", "a child model (Index.parent)")
    if not isinstance(id, str) or not id:
        raise ValueError(f"parent_id() takes the parent's id, a non-empty str, not {id!r}")
    return Q("parent_id", type=join.relation, id=str.__str__(id))


def _join(model: Any, kind: type[Any], query: str, what: str) -> Any:
    join = join_of(model)
    if not isinstance(join, kind):
        name = getattr(model, "__name__", repr(model))
        raise TypeError(f"{query}() takes {what}, not {name}")
    return join


def _sub_query(ctx: Context, join: ParentJoin | ChildJoin, tenant: Any, text: str) -> Query:
    """``<relation>:(text)`` of the filter language: :func:`has_child` / :func:`has_parent`
    of ``text`` compiled as the outer search compiles its names, with the fields the
    server maps for ``join``'s model (:mod:`esmapper._server_mapping`: read only for a name
    the model does not declare). Under ``tenant`` (the search's), a model with custom
    fields resolves no server field under ``idx`` (another tenant's slots), as the outer
    search's tenant catalog does not."""
    server = server_fields(ctx, join.info)
    if tenant is not None and join.info.points.feature("custom_fields") is not None:
        catalog = _NoSlots.of(join.info.catalog).with_server(server)
    else:
        catalog = join.info.catalog.with_server(server)
    query = _inner(join, text, "active", catalog)
    if isinstance(join, ChildJoin):
        return Q("has_child", type=join.relation, query=query)
    return Q("has_parent", parent_type=join.relation, query=query)


class _NoSlots(FieldCatalog):
    """A model's catalog that resolves no server field under ``idx`` (custom-field slots,
    as :class:`~esmapper.custom_fields.catalog.TenantCatalog` under ``tenant=``)."""

    __slots__ = ()

    @classmethod
    def of(cls, catalog: FieldCatalog) -> FieldCatalog:
        found = copy.copy(catalog)
        if type(found) is FieldCatalog:
            found.__class__ = cls
        return found

    def server_allows(self, path: str) -> bool:
        return path.split(".", 1)[0] != "idx"


def _inner(
    join: ParentJoin | ChildJoin,
    filter: str | Query | None,
    mode: str,
    catalog: FieldCatalog | None = None,
) -> Query:
    """``filter`` compiled against the model of ``join`` (``catalog``: its fields, default
    the declared ones) with its soft-delete clause."""
    if mode not in _MODES:
        raise ValueError(f"soft_deletes must be one of {', '.join(_MODES)}, not {mode!r}")
    info = join.info
    if mode == "deleted" and not info.soft_deletes:
        raise QueryValidationError(
            f"soft_deletes='deleted' asks for soft-deleted {info.name} documents, and "
            f"{info.name} has no soft deletes",
            field="soft_deletes",
        )
    default_fields = info.index.default_search_fields if info.index is not None else None
    compiled = compile_filter(
        filter, catalog if catalog is not None else info.catalog, default_fields=default_fields
    )
    if info.soft_deletes and mode == "active" and "is_deleted" in compiled.fields:
        raise QueryValidationError(
            "the filter names is_deleted while soft_deletes='active' hides deleted "
            "documents; pass soft_deletes='all' or 'deleted' instead",
            field="is_deleted",
        )
    clauses: list[Query] = []
    if info.soft_deletes and mode != "all":
        clauses.append(Q("term", is_deleted=mode == "deleted"))
    if compiled.query is None:
        return Q("bool", filter=clauses) if clauses else Q("match_all")
    if not clauses:
        return compiled.query
    return Q("bool", must=[compiled.query], filter=clauses)


def _filtered(query: Query, clauses: list[Any], hidden: list[str]) -> Query:
    """``query`` with ``clauses`` added to its filter and ``hidden`` ids excluded: one
    ``bool`` (a ``bool`` without ``must``/``should`` of its own, such as :func:`_inner`'s
    soft-delete filter of a ``match_all``, takes them in its filter)."""
    extra: dict[str, Any] = {"filter": clauses} if clauses else {}
    if hidden:
        extra["must_not"] = [Q("ids", values=hidden)]
    if isinstance(query, Bool):
        params = dict(query._params)
        if not params.keys() - {"filter", "must_not"} or "filter" in params:
            for key, more in extra.items():
                params[key] = [*params.get(key, ()), *more]
            return Bool(**params)
    if isinstance(query, MatchAll):
        return Q("bool", **extra)
    return Q("bool", must=[query], **extra)


def _inner_options(request: Any) -> Any:
    """The options the inner queries of ``request``'s join queries get their model's
    default clauses under: the search's; a session's tenant too when the searched model
    has no tenants (the session's reads of it drop it), so a tenant's session does not
    match through another tenant's parents or children."""
    options = request.options
    tenant = request.session_tenant
    if tenant is not None and options.tenant is None:
        return attrs.evolve(options, tenant=tenant)
    return options


def with_defaults(ctx: Context, options: Any, parent: ParentJoin, query: Query) -> Query:
    """``query`` with every ``has_child``/``has_parent`` in it (at any depth, built by
    :func:`has_child`/:func:`has_parent`, the filter language or by hand) carrying the
    default clauses of the model its inner query runs on, as a search of that model gets
    them: that model's features' ``search`` point under ``options`` (the tenant, a
    feature's own clauses), the join's own clauses left out, and the soft-delete mode
    ``"all"``: the soft-delete clause is the join query's own (its ``soft_deletes=``,
    written into it when it was built). A new query; ``query`` (the caller's object) is
    not changed."""
    params: dict[str, Any] = {}
    changed = False
    for key, value in query._params.items():
        if isinstance(value, Query):
            new: Any = with_defaults(ctx, options, parent, value)
        elif isinstance(value, list) and any(isinstance(item, Query) for item in value):
            new = [
                with_defaults(ctx, options, parent, item) if isinstance(item, Query) else item
                for item in value
            ]
            new = value if all(a is b for a, b in zip(new, value, strict=True)) else new
        else:
            new = value
        changed = changed or new is not value
        params[key] = new
    name = getattr(query, "name", None)
    relation = params.get("type") if name == "has_child" else params.get("parent_type")
    if name not in ("has_child", "has_parent") or not isinstance(params.get("query"), Query):
        return type(query)(**params) if changed else query
    side = parent if relation == parent.relation else parent.children.get(str(relation))
    if side is None:  # another index's relation: Elasticsearch's to refuse
        return type(query)(**params) if changed else query
    seen = attrs.evolve(options, soft_deletes="all")
    clauses: list[Any] = []
    hidden: list[str] = []
    for hook in side.info.points.search:
        if isinstance(getattr(hook, "__self__", None), ParentJoin | ChildJoin):
            continue
        more, ids = hook(ctx, seen)
        clauses.extend(more)
        hidden.extend(ids)
    if not clauses and not hidden:
        return type(query)(**params) if changed else query
    params["query"] = _filtered(params["query"], clauses, hidden)
    return type(query)(**params)
