"""Index specs: the names of a model's alias and physical indexes, and their bodies."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from esmapper.errors import IndexConfigurationError
from esmapper.ids import ObjectId
from esmapper.indexes import _placement, timeseries
from esmapper.indexes._data_streams import refuse_model_names
from esmapper.indexes._ensure import EnsuredIndex
from esmapper.indexes._fence import FENCE_SUFFIX, fence_name, is_fence
from esmapper.indexes.pipelines import Pipeline
from esmapper.model._sortable import with_sort_normalizer
from esmapper.model.info import IndexOptions, ModelInfo

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["FENCE_SUFFIX", "IndexSpec", "fence_name", "index_owners", "is_fence"]


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class IndexSpec:
    """Where one model's documents live, with the mapper's ``index_prefix`` applied.

    ``alias`` is the name reads and writes go through. For ``versioned`` indexes the physical
    index is ``<alias>-v<version>`` behind the alias; for ``plain`` indexes the alias *is* the
    physical index; for ``daily``/``monthly`` indexes ``alias`` is the umbrella alias over the
    partitions ``<alias>-v<version>-<period>`` (see :mod:`esmapper.indexes.timeseries`).

    Raises :class:`IndexConfigurationError` when a versioned or plain model's index name
    (prefix included) is one Elasticsearch's built-in data-stream templates claim
    (:mod:`esmapper.indexes._data_streams`): no index of that name could be created.

    Writes need the spec bound to a client and a clock (``client=``/``clock=`` or
    :meth:`bind`, which the mapper does with its base client): the first one creates the
    index (per process), time-series writes create partitions lazily and check
    ``max_age``. A method that sends requests takes the client of the running call
    (``mapper.client``, which carries a call's ``timeout=``); the bound one is only the
    fallback.
    """

    __slots__ = (
        "alias",
        "before_create",
        "client",
        "clock",
        "ensured",
        "info",
        "options",
        "partitions",
        "pipeline",
        "prefix",
    )

    def __init__(
        self,
        info: ModelInfo,
        prefix: str = "",
        *,
        client: Elasticsearch | None = None,
        clock: Callable[[], _dt.datetime] | None = None,
        before_create: Callable[[], object] | None = None,
    ) -> None:
        if info.index is None:
            raise TypeError(f"{info.name} is not a Document and has no index")
        self.info = info
        self.options: IndexOptions = info.index
        self.prefix = prefix
        self.alias = f"{prefix}{self.options.name}"
        self.client = client
        self.clock: Callable[[], _dt.datetime] = clock or _utcnow
        #: called right before a write creates one of the model's indexes (the index of a
        #: versioned/plain model, a time-series partition); the mapper's install decision
        #: (:func:`esmapper.migrations.planning.decide_before_first_index`)
        self.before_create: Callable[[], object] | None = before_create
        self.partitions = timeseries.PartitionCache()
        self.ensured = EnsuredIndex()
        #: the ingest pipeline its writes run (:mod:`esmapper.indexes.pipelines`)
        self.pipeline = Pipeline.of(self.options, self.alias)
        refuse_model_names(self)  # not a name Elasticsearch keeps for data streams

    def bind(self, client: Elasticsearch, clock: Callable[[], _dt.datetime] | None = None) -> None:
        """Give the spec the client and clock time-series writes use."""
        self.client = client
        if clock is not None:
            self.clock = clock

    @property
    def kind(self) -> str:
        return self.options.kind

    @property
    def version(self) -> int:
        return self.options.version

    @property
    def is_time_series(self) -> bool:
        """Whether the model is ``daily`` or ``monthly``."""
        return self.kind in timeseries.TIME_SERIES_KINDS

    @property
    def date_field(self) -> str:
        """The attribute that dates a time-series document (by default the model's created
        date: ``created_utc``, or the one ``Index.dates`` names)."""
        return self.options.date_field or self.info.created_field or "created_utc"

    def physical_name(self, version: int | None = None) -> str:
        """The physical index holding ``version`` (the current version by default); for
        time-series models the partitions' common stem ``<alias>-v<version>``."""
        if self.kind == "plain":
            return self.alias
        return f"{self.alias}-v{self.version if version is None else version}"

    def partition_name(self, at: _dt.datetime, version: int | None = None) -> str:
        """The physical partition holding ``at``: ``<alias>-v<N>-2026.12.02`` / ``-2026.12``."""
        return f"{self.physical_name(version)}-{timeseries.suffix(self.kind, at)}"

    def dated_alias(self, at: _dt.datetime) -> str:
        """The dated alias of the period holding ``at``: ``<alias>-2026.12.02``."""
        return f"{self.alias}-{timeseries.suffix(self.kind, at)}"

    def write_name(self, index: str | None = None) -> str:
        """The alias a document write aimed at ``index`` must name: the one rule "every
        document write goes through the model's aliases" (docs/architecture.md).

        A write that names a physical index does not follow a reindex's alias swap: after
        the swap and the delete of the old index, Elasticsearch would create the old index
        again (guessed mappings, behind no alias) and store the write where no read finds
        it. Through the alias, the write reaches the new index. A write conditioned on a
        version read from ``index`` goes to its fence alias instead
        (:meth:`conditioned_target`): the version means nothing in the new index.

        - versioned and plain models: :attr:`write_target` (the alias) for ``None``, the
          alias itself and any ``<alias>-v<N>``;
        - time-series models: the dated alias of a partition's period for a partition of
          any version (``<alias>-v<N>-<period>``), a dated alias unchanged;
        - the fence alias of one of the model's physical indexes unchanged (where a
          version-conditioned write goes: :meth:`conditioned_target`).

        Sends nothing. Raises ``ValueError`` (a programming error) for a name that is none
        of the model's indexes or aliases, and for a time-series write that names no period
        (``None``, the umbrella alias).
        """
        if index is not None and is_fence(index) and self.fence_of(index[: -len(FENCE_SUFFIX)]):
            return index
        if not self.is_time_series:
            if index is None or index == self.alias:
                return self.write_target
            if self.kind == "versioned" and re.fullmatch(rf"{re.escape(self.alias)}-v\d+", index):
                return self.write_target
        elif index is not None:
            partition = timeseries.parse_partition(self, index)
            if partition is not None:
                return self.dated_alias(partition.start)
            if timeseries.is_dated_alias(self, index):
                return index
        hint = " (a time-series write names its period's dated alias)"
        raise ValueError(
            f"{self.info.name}: a document write cannot go to {index!r}: it is not one of the "
            f"model's indexes or aliases{hint if self.is_time_series else ''}"
        )

    def fence_of(self, physical: str | None) -> str | None:
        """The fence alias (:func:`fence_name`) of ``physical`` when it is one of the
        physical indexes this model fences: a versioned model's ``<alias>-v<N>``, a
        time-series model's partition ``<alias>-v<N>-<period>`` (any version); ``None``
        otherwise (a plain model's index, an alias, ``None``, another name). Sends
        nothing."""
        if physical is None:
            return None
        if self.kind == "versioned":
            if re.fullmatch(rf"{re.escape(self.alias)}-v\d+", physical):
                return fence_name(physical)
        elif self.is_time_series and timeseries.parse_partition(self, physical) is not None:
            return fence_name(physical)
        return None

    def conditioned_target(self, target: str, read_from: str | None) -> str:
        """Where a write conditioned on a version (``if_seq_no``/``if_primary_term``) read
        from the physical index ``read_from`` goes: the one owner of that choice.

        The fence alias of ``read_from`` (:meth:`fence_of`) when the model fences it: the
        write reaches the very index the version was read from while that index still
        serves the model, and is refused (404 ``index_not_found_exception`` under
        ``require_alias``, not applied) once a reindex's swap removed the fence;
        :func:`esmapper._outcomes.send` turns that refusal into a version conflict.
        Otherwise ``target`` (the model's alias or dated alias, as for an unconditioned
        write): a plain model (no version bump exists for it), or a version whose index is
        not known (a document never read, its ``version`` set by hand). Sends nothing.
        """
        fence = self.fence_of(read_from)
        return target if fence is None else fence

    @property
    def index_pattern(self) -> str:
        """The pattern of the current version's partitions (``<alias>-v<N>-*``)."""
        return f"{self.physical_name()}-*"

    @property
    def template_name(self) -> str:
        """The index template of the current version's partitions."""
        return f"{self.physical_name()}-template"

    @property
    def read_target(self) -> str:
        return self.alias

    @property
    def write_target(self) -> str:
        """The name writes are sent to (the alias; a single-index alias is writable)."""
        return self.alias

    def write_targets(
        self, writes: Sequence[tuple[Any, bool]], *, client: Elasticsearch | None = None
    ) -> list[str]:
        """The index or alias each ``(doc, removing)`` write goes to, in order.

        ``client`` sends the requests below: the write path passes ``mapper.client``, so a
        call's ``timeout=`` bounds them too; without it, the bound client.

        Versioned and plain models: :attr:`write_target` for every write, after making sure
        the index (and alias) exists, on the first write of this spec only
        (:meth:`~esmapper.indexes._ensure.EnsuredIndex.ensure`: nothing is sent later).
        Time-series models: the partition of each document
        (:func:`~esmapper.indexes._placement.time_series_targets`: ``max_age`` checked before
        anything is sent, ids not certain looked up in real time across the partitions,
        partitions created on the first add/save of their period in this process).
        """
        client = client if client is not None else self._bound()
        if not self.is_time_series:
            self.ensured.ensure(client, self)
            return [self.write_target] * len(writes)
        return _placement.time_series_targets(self, client, writes)

    def write_index_for(
        self, doc: Any, *, removing: bool = False, client: Elasticsearch | None = None
    ) -> str:
        """The target of one write (:meth:`write_targets`)."""
        return self.write_targets([(doc, removing)], client=client)[0]

    def is_alias(self, name: str) -> bool:
        """Whether ``name`` is one of this model's aliases (a versioned model's alias, a
        time-series model's umbrella or dated alias, the fence alias of one of its
        physical indexes): a write naming it must not create an
        index of that name (``require_alias``). Sends nothing."""
        if is_fence(name) and self.fence_of(name[: -len(FENCE_SUFFIX)]) is not None:
            return True
        if self.kind == "versioned":
            return name == self.alias
        if self.is_time_series:
            return name == self.alias or timeseries.is_dated_alias(self, name)
        return False

    def ensure_again(self, client: Elasticsearch, target: str) -> None:
        """The recovery of "a write's target vanished": a write through ``target`` (one of
        the model's aliases) was refused because it does not exist (``require_alias``;
        deleted by another mapper or process, e.g. ``delete_indexes``, or by hand). Forget
        what this process believed about it and make it exist again.

        Versioned and plain models: the index is ensured again
        (:class:`~esmapper.indexes._ensure.EnsuredIndex`: the first-write requests of
        :mod:`esmapper.indexes._ensure`). Time-series models: the period of the dated alias
        ``target`` is dropped from :attr:`partitions` and its partition ensured again
        (:meth:`~esmapper.indexes.timeseries.PartitionCache.ensure`). Raises what those
        raise (:class:`~esmapper.errors.AliasNameTakenError` when a concrete index took the
        name, :class:`IndexConfigurationError`, the client's errors), and ``ValueError``
        for a time-series ``target`` that is no dated alias of the model.
        """
        if not self.is_time_series:
            self.ensured.forget()
            self.ensured.ensure(client, self)
            return
        start = timeseries.dated_alias_start(self, target)
        if start is None:
            raise ValueError(f"{self.info.name}: {target!r} is not one of its dated aliases")
        self.partitions.forget({start})
        self.partitions.ensure(client, self, start)

    def forget_ensured(self) -> None:
        """Forget that this process ensured the model's index and partitions: the next write
        checks (and creates) them again. Call it after deleting them."""
        self.ensured.forget()
        self.partitions.forget()

    def read_index_for_id(self, id: str) -> str:
        """Where a by-id read of ``id`` goes: the dated alias of an ObjectId
        id's period for time-series models, else :attr:`read_target`. Sends nothing; a miss
        there should fall back to an ``ids`` search on :attr:`read_target`."""
        if self.is_time_series and ObjectId.is_valid(id):
            return self.dated_alias(ObjectId(id).created_at)
        return self.read_target

    def _bound(self) -> Elasticsearch:
        if self.client is None:
            raise IndexConfigurationError(
                f"{self.info.name}: writing through an index spec needs a client "
                "(IndexSpec(..., client=...) or spec.bind(client, clock))",
                index=self.alias,
            )
        return self.client

    def body(self, *, with_alias: bool) -> dict[str, Any]:
        """The create-index body: settings (``Index.settings``, plus the ``sort``
        normalizer when the mapping names it: :mod:`esmapper.model._sortable`), mappings
        and (optionally) the alias."""
        body: dict[str, Any] = {"mappings": self.info.mapping}
        # the ``sort`` normalizer of keyword_and_sort_fields() when the mapping names it
        settings = with_sort_normalizer(self.options.settings, self.info.mapping)
        if settings:
            body["settings"] = settings
        if with_alias and self.kind != "plain":
            body["aliases"] = {self.alias: {}}
        return body

    def __repr__(self) -> str:
        return f"IndexSpec({self.info.name}, alias={self.alias!r}, kind={self.kind!r})"


def index_owners(specs: Iterable[IndexSpec]) -> list[tuple[str, IndexSpec]]:
    """One entry per index among the models' ``specs``, in their order: the names of the
    models sharing it joined by ``","`` (a parent and its children,
    :mod:`esmapper._join`: ``"Company,Worker"``) and the first one's spec. What lists,
    counts and checks indexes (``esmapper indexes list``/``stats``, ``health``) goes
    through, so a shared index is shown, counted and checked once."""
    owners: dict[str, tuple[list[str], IndexSpec]] = {}
    for spec in specs:
        names, _ = owners.setdefault(spec.alias, ([], spec))
        names.append(spec.info.name)
    return [(",".join(names), spec) for names, spec in owners.values()]
