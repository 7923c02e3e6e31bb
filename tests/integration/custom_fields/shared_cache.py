"""A cache client shared by processes through a file (tests only): what a Redis-backed
``CacheClient`` gives an application, so cross-process invalidation can be shown."""

from __future__ import annotations

import fcntl
import os
import pickle
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from esmapper.cache import CacheStats


class FileCache:
    """A :class:`esmapper.CacheClient` whose entries live in one pickle file, every
    operation under an exclusive ``flock`` (slow, correct, enough for a test)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stats = CacheStats()

    @contextmanager
    def _entries(self) -> Iterator[dict[str, tuple[Any, float]]]:
        with open(self.path + ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                entries: dict[str, tuple[Any, float]] = {}
                if os.path.exists(self.path) and os.path.getsize(self.path):
                    with open(self.path, "rb") as f:
                        entries = pickle.load(f)
                now = time.time()
                entries = {k: v for k, v in entries.items() if v[1] > now}
                before = dict(entries)
                yield entries
                if entries != before or len(entries) != len(before):
                    tmp = f"{self.path}.{os.getpid()}.tmp"
                    with open(tmp, "wb") as f:
                        pickle.dump(entries, f)
                    os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get(self, key: str) -> Any:
        with self._entries() as entries:
            entry = entries.get(key)
        if entry is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return entry[0]

    def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        with self._entries() as entries:
            entries[key] = (value, time.time() + (ttl or 300.0))
        self.stats.sets += 1

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        with self._entries() as entries:
            current = entries.get(key, (None, 0.0))[0]
            if current != expected:
                return False
            entries[key] = (value, time.time() + (ttl or 300.0))
        self.stats.sets += 1
        return True

    def remove(self, key: str) -> None:
        with self._entries() as entries:
            if entries.pop(key, None) is not None:
                self.stats.removals += 1

    def remove_many(self, keys: Iterable[str]) -> None:
        with self._entries() as entries:
            for key in keys:
                entries.pop(key, None)

    def remove_by_prefix(self, prefix: str) -> int:
        with self._entries() as entries:
            doomed = [k for k in entries if k.startswith(prefix)]
            for key in doomed:
                del entries[key]
        return len(doomed)
