"""Frames: the immutable, interned labels of calling-context tree nodes.

A frame says *what* a node is (a source line, a module, an op, a kernel, ...);
the tree says *where* it was called from. Frames are plain values: equal fields
mean the same frame, which is what lets two profiles be unified by path.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class FrameKind(enum.Enum):
    ROOT = "root"
    SCOPE = "scope"  # user scope, record_function, annotation, ProfilerStep#N
    PYTHON = "python"  # file, line, function (name)
    MODULE = "module"  # attribute path (name), class (cls)
    REGION = "region"  # torch.compile region / compiled graph / jit(...)
    BACKWARD = "backward"  # what is below runs in the backward pass of the context above
    OP = "op"  # framework op: aten::addmm, dot_general
    KERNEL = "kernel"  # device kernel (name, device, stream)
    PART = "part"  # one original op inside a fused kernel: an *estimated* share
    NATIVE = "native"  # sampled native code below an op (symbol name, library file, layer cls): *estimated*


# Which kinds may appear directly under which. Checked by Profile.check().
ALLOWED_CHILDREN: dict[FrameKind, frozenset[FrameKind]] = {
    kind: frozenset(FrameKind) - {FrameKind.ROOT} for kind in FrameKind
}
ALLOWED_CHILDREN[FrameKind.KERNEL] = frozenset({FrameKind.PART})
ALLOWED_CHILDREN[FrameKind.PART] = frozenset()
ALLOWED_CHILDREN[FrameKind.NATIVE] = frozenset()


@dataclass(frozen=True, slots=True)
class Frame:
    """One context label. Unused fields keep their defaults.

    ``name`` is the function name (python), attribute path (module), scope,
    region, op or kernel name; for a ``part`` it is the original op.
    ``file``/``line`` locate python frames and parts; ``cls`` is a module's
    class; ``module`` is the module path a ``part`` came from;
    ``device``/``stream`` place a kernel; a compiled region's ``file``/``line`` are its ``torch.compile``
    line (its location: not in its label, which is the same in a live run and an imported trace);
    ``ids`` identify a region's instance (a torch.compile
    region's frame/compile id ``0/1``, a compiled graph's cache key), so that nobody parses names.
    A ``native`` frame (sampled native code, collect/native) has the symbol as ``name``, the shared library's
    file name as ``file`` and its layer (collect/native/layers.py) as ``cls``.
    """

    kind: FrameKind
    name: str = ""
    file: str = ""
    line: int = 0
    cls: str = ""
    module: str = ""
    device: str = ""
    stream: int = -1
    ids: str = ""

    # --- constructors -------------------------------------------------
    @staticmethod
    def root() -> Frame:
        return ROOT

    @staticmethod
    def scope(name: str) -> Frame:
        return Frame(FrameKind.SCOPE, name)

    @staticmethod
    def python(file: str, line: int, function: str) -> Frame:
        return Frame(FrameKind.PYTHON, function, file=file, line=line)

    @staticmethod
    def module_(path: str, cls: str = "") -> Frame:
        return Frame(FrameKind.MODULE, path, cls=cls)

    @staticmethod
    def region(name: str, ids: str = "") -> Frame:
        return Frame(FrameKind.REGION, name, ids=ids)

    @staticmethod
    def backward() -> Frame:
        return BACKWARD

    @staticmethod
    def op(name: str) -> Frame:
        return Frame(FrameKind.OP, name)

    @staticmethod
    def kernel(name: str, device: str = "", stream: int = -1) -> Frame:
        return Frame(FrameKind.KERNEL, name, device=device, stream=stream)

    @staticmethod
    def part(op: str, file: str = "", line: int = 0, module: str = "") -> Frame:
        return Frame(FrameKind.PART, op, file=file, line=line, module=module)

    @staticmethod
    def native(symbol: str, library: str = "", layer: str = "") -> Frame:
        return Frame(FrameKind.NATIVE, symbol, file=library, cls=layer)

    # --- presentation -------------------------------------------------
    def label(self) -> str:
        """Human label used by every renderer."""
        k = self.kind
        if k is FrameKind.ROOT:
            return "<root>"
        if k is FrameKind.PYTHON:
            return f"{self.file}:{self.line} {self.name}"
        if k is FrameKind.MODULE:
            return f"{self.name} ({self.cls})" if self.cls else self.name
        if k is FrameKind.BACKWARD:
            return "[backward]"
        if k is FrameKind.PART:
            where = f" @ {self.file}:{self.line}" if self.file else ""
            return f"~{self.name}{where} (estimated)"
        if k is FrameKind.SCOPE:
            return f"[{self.name}]"
        if k is FrameKind.REGION and self.cls:  # a region named after what the user compiled (attribute.structure)
            # (its torch.compile line is its location, not part of its name: an imported trace has none)
            return f"<{self.cls}({self.name})>" if self.name else f"<{self.cls}>"
        if k is FrameKind.NATIVE:
            return f"{self.name} ({self.file})" if self.file else self.name
        if k is FrameKind.REGION:
            return f"<{self.name}: {self.ids}>" if self.ids else f"<{self.name}>"
        return self.name

    def location(self) -> str:
        """Where a region came from, shown next to its label: a compiled region's ``torch.compile`` line
        (``train.py:17``) when the run recorded it, else "". Python frames and parts carry theirs in the label."""
        if self.kind is FrameKind.REGION and self.file:
            return f"{self.file}:{self.line}" if self.line else self.file
        return ""

    def located_label(self) -> str:
        """``label()`` followed by ``location()``: ``<torch.compile(MLP.forward)> @ train.py:17``."""
        where = self.location()
        return f"{self.label()} @ {where}" if where else self.label()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        for name, default in _DEFAULTS.items():
            value = getattr(self, name)
            if value != default:
                out[name] = value
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> Frame:
        kind = FrameKind(data["kind"])
        fields_ = {k: data[k] for k in _DEFAULTS if k in data}
        return Frame(kind, **fields_)


_DEFAULTS: dict[str, Any] = {
    "name": "",
    "file": "",
    "line": 0,
    "cls": "",
    "module": "",
    "device": "",
    "stream": -1,
    "ids": "",
}

ROOT = Frame(FrameKind.ROOT)
BACKWARD = Frame(FrameKind.BACKWARD)

__all__ = ["ALLOWED_CHILDREN", "BACKWARD", "ROOT", "Frame", "FrameKind"]
