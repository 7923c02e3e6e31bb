"""Micro benchmark of esmapper.ids (a script, not a test).

Prints the per-call cost of ``compose_id`` and ``check_id`` next to naive baselines measured
in the same run, and the ratios (lower is better; < 1.0 means faster than the baseline):

* compose baseline: ``":".join(quote(t, safe="") for t in terms)`` (no checks at all);
* check baseline:   ``len(id.encode("utf-8")) <= 512`` (no type, emptiness or error work).

    python bench/bench_ids.py [--repeat N]
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from functools import partial
from urllib.parse import quote

from esmapper.ids import ObjectId, check_id, compose_id

GUID = "b3a1c7e2-4d5f-4a8b-9c0d-1e2f3a4b5c6d"
CORE = "System.Private.CoreLib, Version=8.0.0.0, Culture=neutral, PublicKeyToken=7cec85d7bea7798e"

COMPOSE_CASES: dict[str, tuple[str, ...]] = {
    "unreserved (inbox)": ("acme", "corp_42", "MyApp.Handlers.OrderHandler"),
    "escapes (a/b, c:d)": ("a/b", "c:d", "hello world"),
    "non-ASCII": ("café", "日本語", "😀"),
    "long (2 GUIDs + type)": (
        GUID,
        GUID,
        f"System.Collections.Generic.List`1[[System.String, {CORE}]]",
    ),
}

CHECK_CASES: dict[str, str] = {
    "ObjectId (24 hex)": str(ObjectId.new()),
    "composed ASCII (65 B)": compose_id(*COMPOSE_CASES["unreserved (inbox)"]),
    "ASCII 512 B": "a" * 512,
    "non-ASCII (30 chars)": "Ünïcödé-ïd-" * 2 + "日本語😀" * 2,
}


def naive_compose(*terms: str) -> str:
    return ":".join(quote(t, safe="") for t in terms)


def naive_check(id_: str) -> bool:
    return len(id_.encode("utf-8")) <= 512


def per_call(fn: Callable[[], object], repeat: int) -> float:
    """Best-of-``repeat`` seconds per call."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat

    print(f"{'compose_id':<26}{'esmapper':>12}{'naive quote':>14}{'ratio':>8}")
    for name, terms in COMPOSE_CASES.items():
        assert compose_id(*terms) == naive_compose(*terms)
        ours = per_call(partial(compose_id, *terms), repeat)
        base = per_call(partial(naive_compose, *terms), repeat)
        print(f"{name:<26}{ours * 1e9:>9.0f} ns{base * 1e9:>11.0f} ns{ours / base:>8.2f}")

    print()
    print(f"{'check_id':<26}{'esmapper':>12}{'naive len':>14}{'ratio':>8}{'vs naive compose':>18}")
    compose_base = per_call(partial(naive_compose, *COMPOSE_CASES["unreserved (inbox)"]), repeat)
    for name, id_ in CHECK_CASES.items():
        ours = per_call(partial(check_id, id_), repeat)
        base = per_call(partial(naive_check, id_), repeat)
        print(
            f"{name:<26}{ours * 1e9:>9.0f} ns{base * 1e9:>11.0f} ns{ours / base:>8.2f}"
            f"{ours / compose_base:>18.2f}"
        )

    print()
    new = per_call(ObjectId.new, repeat)
    print(f"ObjectId.new(): {new * 1e9:.0f} ns per call")


if __name__ == "__main__":
    main()
