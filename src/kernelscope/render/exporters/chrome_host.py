"""What a host frame's events are called in a Chrome trace: the category, name and arguments Kineto would
give them, so that kernelscope's importer (the one attribution path) rebuilds the same frame from them."""

from __future__ import annotations

from typing import Any

from ...attribute.compiled_regions import COMPILED
from ...attribute.records import BACKWARD_PREFIX, GRAPH_CALL, TORCH_REGION, Kind, host_kind
from ...model import Frame, FrameKind, Profile


def event_name(frame: Frame, in_backward: bool) -> tuple[str, str]:
    """Category and name: user lines (``file(line): function``) and modules (``nn.Module: path``) are python
    functions, compiled regions keep the names torch gives them (a region named after what the user compiled
    is torch's ``Torch-Compiled Region: F/C`` again, which the import names the same way), and an autograd node whose name reads as a
    region (``CompiledFunctionBackward``) is named as torch records it (``autograd::engine::evaluate_function: X``)."""
    kind = frame.kind
    if kind is FrameKind.OP and in_backward and host_kind(Kind.OP, frame.name) is not Kind.OP:
        return "cpu_op", BACKWARD_PREFIX + frame.name
    if kind is FrameKind.PYTHON:
        return "python_function", f"{frame.file}({frame.line}): {frame.name}"
    if kind is FrameKind.MODULE:
        return "python_function", f"nn.Module: {frame.name}"
    if kind is FrameKind.SCOPE:
        return "user_annotation", frame.name
    if kind is FrameKind.NATIVE:
        return "native", frame.label()
    if kind is FrameKind.REGION and frame.cls == COMPILED:  # named after what was compiled: torch's name for it
        return "cpu_op", f"{TORCH_REGION}: {frame.ids}" if frame.ids else TORCH_REGION
    if kind is FrameKind.REGION and frame.ids:
        if frame.name == GRAPH_CALL:
            return "cpu_op", f"## Call {GRAPH_CALL} {frame.ids} ##"
        return "cpu_op", f"{frame.name}: {frame.ids}"
    return "cpu_op", frame.name


class HostEvents:
    """Per node, computed once: its events' category, name and the arguments that keep what the frame is.

    ``Calls: 0`` marks a user line or module recorded with no call of its own (running on from before a live
    window); ``kernel_file`` marks a Triton launch from compiled code (a region named by its kernel), as torch
    records it."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.counts = profile.exclusive("count")
        self.kernel_files: dict[str, Any] = profile.metadata.get("triton_kernel_files") or {}
        self.cache: dict[int, tuple[str, str, dict[str, Any]]] = {}

    def __call__(self, node: int) -> tuple[str, str, dict[str, Any]]:
        got = self.cache.get(node)
        if got is None:
            got = self.cache[node] = self._new(node)
        return got

    def _new(self, node: int) -> tuple[str, str, dict[str, Any]]:
        p = self.profile
        frame = p.frame_of(node)
        in_backward = node > 0 and p.frame_of(int(p.parent[node])).kind is FrameKind.BACKWARD
        cat, name = event_name(frame, in_backward)
        args: dict[str, Any] = {}
        if frame.kind in (FrameKind.PYTHON, FrameKind.MODULE) and self.counts[node] < 0.5:
            args["Calls"] = 0
        if frame.kind is FrameKind.REGION and host_kind(Kind.OP, name) is not Kind.REGION:
            kernel_file = self.kernel_files.get(frame.name)
            args["kernel_file"] = kernel_file if isinstance(kernel_file, str) else ""
        return cat, name, args
