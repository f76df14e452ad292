"""The header's line on native sampling (``run --native``): what was sampled, at what rate, or why not."""

from __future__ import annotations

from typing import Any


def native_note(md: dict[str, Any]) -> str | None:
    native = md.get("native")
    if not isinstance(native, dict):
        return None
    if native.get("unavailable"):
        return f"native sampling unavailable: {native['unavailable']}"
    clock = native.get("clock")
    searched = float(clock.get("searched_ms", 0)) if isinstance(clock, dict) else 0.0
    return (
        f"native: {native.get('samples', 0)} stacks sampled (all threads, whole run) at {native.get('rate', '?')}/s, "
        f"~{native.get('samples_in_ops', 0)} in ops, ~{native.get('samples_between_ops', 0)} between ops; "
        f"{native.get('ops_split', 0)} ops split (those with >= {native.get('min_samples', '?')} samples), "
        f"{native.get('ops_below_min_samples', 0)} left whole; clock within {searched:.0f} ms"
    )
