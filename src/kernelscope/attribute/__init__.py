"""Attribute: collected events into a Profile (deterministic, unit-testable from synthetic events)."""
