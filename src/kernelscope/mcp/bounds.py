"""Keep every answer small: a row limit, a byte cap, clipped labels, and an explicit ``truncated``.

Agents pay for every byte they read; a 10,000-character kernel name or a 100,000-row table must not
reach them whole. Keys (what the next call needs) are never clipped; labels (what a person reads) are.
"""

from __future__ import annotations

import json
from typing import Any

from .failure import ToolFailure

DEFAULT_LIMIT = 20
MAX_LIMIT = 500
DEFAULT_MAX_BYTES = 16_000
MIN_MAX_BYTES = 1_000
MAX_MAX_BYTES = 200_000
LABEL_CHARS = 200


def int_option(name: str, value: int, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise ToolFailure("bad_option", f"{name}={value}: must be between {lo} and {hi}", option=name)
    return value


def choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ToolFailure(
            "bad_option", f"{name}={value!r}: not one of {', '.join(choices)}", option=name, choices=list(choices)
        )
    return value


def clip(text: str, chars: int = LABEL_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def size(doc: Any) -> int:
    return len(json.dumps(doc, separators=(",", ":"), allow_nan=False).encode())


def bounded(doc: dict[str, Any], rows_key: str, rows: list[Any], limit: int, max_bytes: int) -> dict[str, Any]:
    """``doc`` with ``doc[rows_key]`` = as many of ``rows`` as ``limit`` and ``max_bytes`` allow.

    Adds ``total_rows``, ``returned`` and ``truncated`` (true when rows were left out, by either bound).
    """
    max_bytes = int_option("max_bytes", max_bytes, MIN_MAX_BYTES, MAX_MAX_BYTES)
    kept = rows[:limit]
    out = {**doc, rows_key: kept, "total_rows": len(rows), "returned": len(kept), "truncated": len(kept) < len(rows)}
    if size(out) <= max_bytes:
        return out
    # binary search on how many rows fit: sizes grow with the prefix length
    lo, hi = 0, len(kept)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = {**out, rows_key: kept[:mid], "returned": mid, "truncated": True}
        if size(trial) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    out = {**out, rows_key: kept[:lo], "returned": lo, "truncated": True, "max_bytes": max_bytes}
    return out


def capped(doc: dict[str, Any], limit: int, max_bytes: int) -> dict[str, Any]:
    """A nested document (timeline, ranks) within bounds: every list cut to ``limit`` items, then the
    longest lists halved until the JSON fits ``max_bytes``. ``truncated`` lists the cut lists' paths
    with their full lengths (``{"devices[0].idle_gaps.gaps": 412}``); empty when nothing was cut."""
    max_bytes = int_option("max_bytes", max_bytes, MIN_MAX_BYTES, MAX_MAX_BYTES)
    cut: dict[str, int] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        if isinstance(node, (list, tuple)):  # tuples too: dataclasses.asdict keeps them
            if len(node) > limit:
                cut[path] = len(node)
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node[:limit])]
        if isinstance(node, str):
            return clip(node, 4 * LABEL_CHARS)
        return node

    out: dict[str, Any] = walk(doc, "")
    while size({**out, "truncated": cut}) > max_bytes:
        longest = _longest_list(out, "")
        if longest is None:
            raise ToolFailure(
                "bad_option", f"max_bytes={max_bytes}: too small for this answer; raise it", option="max_bytes"
            )
        path, lst = longest
        cut.setdefault(path, len(lst))
        del lst[len(lst) // 2 :]
    return {**out, "truncated": cut}


def _longest_list(node: Any, path: str) -> tuple[str, list[Any]] | None:
    best: tuple[str, list[Any]] | None = None
    if isinstance(node, dict):
        children: list[tuple[str, Any]] = [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
    elif isinstance(node, list):
        if node:
            best = (path, node)
        children = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
    else:
        return None
    for child_path, child in children:
        got = _longest_list(child, child_path)
        if got is not None and (best is None or len(got[1]) > len(best[1])):
            best = got
    return best
