"""Index specs: the names of a model's alias and physical indexes, and their bodies."""

from __future__ import annotations

from typing import Any

from esmapper.model.info import IndexOptions, ModelInfo

__all__ = ["IndexSpec"]


class IndexSpec:
    """Where one model's documents live, with the mapper's ``index_prefix`` applied.

    ``alias`` is the name reads and writes go through. For ``versioned`` indexes the physical
    index is ``<alias>-v<version>`` behind the alias; for ``plain`` indexes the alias *is* the
    physical index.
    """

    __slots__ = ("alias", "info", "options", "prefix")

    def __init__(self, info: ModelInfo, prefix: str = "") -> None:
        if info.index is None:
            raise TypeError(f"{info.name} is not a Document and has no index")
        self.info = info
        self.options: IndexOptions = info.index
        self.prefix = prefix
        self.alias = f"{prefix}{self.options.name}"

    @property
    def kind(self) -> str:
        return self.options.kind

    @property
    def version(self) -> int:
        return self.options.version

    def physical_name(self, version: int | None = None) -> str:
        """The physical index holding ``version`` (the current version by default)."""
        if self.kind == "plain":
            return self.alias
        return f"{self.alias}-v{self.version if version is None else version}"

    @property
    def read_target(self) -> str:
        return self.alias

    @property
    def write_target(self) -> str:
        """The name writes are sent to (the alias; a single-index alias is writable)."""
        return self.alias

    def write_index_for(self, doc: Any) -> str:
        """The index or alias a write of ``doc`` goes to (time-series: its partition)."""
        return self.write_target

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
