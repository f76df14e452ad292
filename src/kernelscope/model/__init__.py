"""The profile model: frames, the calling-context tree, metrics, metadata, timeline."""

from .frames import Frame, FrameKind
from .io import load, save
from .profile import STANDARD_METRICS, InvariantError, Profile, ProfileBuilder
from .timeline import Category, Timeline, TimelineBuilder, Track

__all__ = [
    "STANDARD_METRICS",
    "Category",
    "Frame",
    "FrameKind",
    "InvariantError",
    "Profile",
    "ProfileBuilder",
    "Timeline",
    "TimelineBuilder",
    "Track",
    "load",
    "save",
]
