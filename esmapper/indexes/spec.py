"""Index specs: the names of a model's alias and physical indexes, and their bodies."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from esmapper.errors import IndexConfigurationError
from esmapper.ids import ObjectId
from esmapper.indexes import placement, timeseries
from esmapper.indexes.ensure import EnsuredIndex
from esmapper.indexes.pipelines import Pipeline
from esmapper.model.info import IndexOptions, ModelInfo

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["IndexSpec"]


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class IndexSpec:
    """Where one model's documents live, with the mapper's ``index_prefix`` applied.

    ``alias`` is the name reads and writes go through. For ``versioned`` indexes the physical
    index is ``<alias>-v<version>`` behind the alias; for ``plain`` indexes the alias *is* the
    physical index; for ``daily``/``monthly`` indexes ``alias`` is the umbrella alias over the
    partitions ``<alias>-v<version>-<period>`` (see :mod:`esmapper.indexes.timeseries`).

    Writes need the spec bound to a client and a clock (``client=``/``clock=`` or
    :meth:`bind`, which the mapper does): the first one creates the index (per process),
    time-series writes create partitions lazily and check ``max_age``.
    """

    __slots__ = (
        "alias",
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
    ) -> None:
        if info.index is None:
            raise TypeError(f"{info.name} is not a Document and has no index")
        self.info = info
        self.options: IndexOptions = info.index
        self.prefix = prefix
        self.alias = f"{prefix}{self.options.name}"
        self.client = client
        self.clock: Callable[[], _dt.datetime] = clock or _utcnow
        self.partitions = timeseries.PartitionCache()
        self.ensured = EnsuredIndex()
        #: the ingest pipeline its writes run (:mod:`esmapper.indexes.pipelines`)
        self.pipeline = Pipeline.of(self.options, self.alias)
        date_field = self.options.date_field
        if self.is_time_series and date_field is not None and date_field not in info.field_by_name:
            raise IndexConfigurationError(
                f"{info.name}.Index.date_field {date_field!r} is not a field of {info.name}",
                index=self.alias,
            )

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
        """The attribute that dates a time-series document (``created_utc`` by default)."""
        return self.options.date_field or "created_utc"

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

    def write_alias(self, index: str) -> str:
        """The name a write into the physical index ``index`` must use: the dated alias of
        one of the model's partitions (so the write follows a reindex's alias swap), else
        ``index`` unchanged. Sends nothing."""
        partition = timeseries.parse_partition(self, index) if self.is_time_series else None
        return index if partition is None else self.dated_alias(partition.start)

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

    def write_targets(self, writes: Sequence[tuple[Any, bool]]) -> list[str]:
        """The index or alias each ``(doc, removing)`` write goes to, in order.

        Versioned and plain models: :attr:`write_target` for every write, after making sure
        the index (and alias) exists, on the first write of this spec only
        (:meth:`~esmapper.indexes.ensure.EnsuredIndex.ensure`: nothing is sent later).
        Time-series models: the partition of each document
        (:func:`~esmapper.indexes.placement.time_series_targets`: ``max_age`` checked before
        anything is sent, ids not certain looked up in real time across the partitions,
        partitions created on the first add/save of their period in this process).
        """
        client = self._bound()
        if not self.is_time_series:
            self.ensured.ensure(client, self)
            return [self.write_target] * len(writes)
        return placement.time_series_targets(self, client, writes)

    def write_index_for(self, doc: Any, *, removing: bool = False) -> str:
        """The target of one write (:meth:`write_targets`)."""
        return self.write_targets([(doc, removing)])[0]

    def is_alias(self, name: str) -> bool:
        """Whether ``name`` is one of this model's aliases (a versioned model's alias, a
        time-series model's umbrella or dated alias): a write naming it must not create an
        index of that name (``require_alias``). Sends nothing."""
        if self.kind == "versioned":
            return name == self.alias
        if self.is_time_series:
            return name == self.alias or timeseries.is_dated_alias(self, name)
        return False

    def forget_ensured(self) -> None:
        """Forget that this process ensured the model's index and partitions: the next write
        checks (and creates) them again. Call it after deleting them."""
        self.ensured.forget()
        self.partitions.forget()

    def read_index_for_id(self, id: str) -> str:
        """Where a by-id read of ``id`` goes (FEATURES IX-10): the dated alias of an ObjectId
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
        """The create-index body: settings, mappings and (optionally) the alias."""
        body: dict[str, Any] = {"mappings": self.info.mapping}
        if self.options.settings:
            body["settings"] = dict(self.options.settings)
        if with_alias and self.kind != "plain":
            body["aliases"] = {self.alias: {}}
        return body

    def __repr__(self) -> str:
        return f"IndexSpec({self.info.name}, alias={self.alias!r}, kind={self.kind!r})"
