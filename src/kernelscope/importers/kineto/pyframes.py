"""Python frames as Kineto names them: ``models.py(27): forward`` and ``nn.Module: Linear_0``.

Kineto shortens paths relative to ``sys.path``, so "is this the user's code" is decided on the
short path: interpreter internals (``<built-in ...>``, ``<frozen ...>``, ``<string>``), the standard
library, the framework (torch, triton) and a few infrastructure packages are dropped; anything else
(the user's scripts, and model libraries such as transformers or vllm, which is where model code
lives) is kept. Dropped frames vanish from the tree: what ran inside them attaches to the nearest
kept frame, and their self time counts there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...attribute.userframes import FRAMEWORK_PACKAGES, STDLIB
from ...model import Frame

_PY_NAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
_MODULE = "nn.Module: "
# Inductor output code: `c` + a 51-character base32 hash (torch._inductor.codecache), on sys.path when run
_INDUCTOR_OUTPUT = re.compile(r"^c[a-z2-7]{51}\.py$")


@dataclass(frozen=True, slots=True)
class PyFrameRule:
    """Which python frames count as user code; overridable by callers."""

    drop_packages: frozenset[str] = FRAMEWORK_PACKAGES | STDLIB

    def is_user_file(self, file: str) -> bool:
        if not file or file.startswith("<"):
            return False
        norm = file.replace("\\", "/")
        if "torchinductor" in norm or _INDUCTOR_OUTPUT.match(norm.rsplit("/", 1)[-1]):
            return False  # Inductor's generated wrapper (written to its cache, named by a hash): not the user's
        for marker in ("/site-packages/", "/dist-packages/"):
            at = norm.rfind(marker)
            if at >= 0:  # an installed package: a model library is user code, a framework is not
                top = norm[at + len(marker) :].split("/", 1)[0]
                return top.removesuffix(".py") not in self.drop_packages
        if "/lib/python3" in norm:
            return False
        if norm.startswith("/"):
            return True  # an absolute path outside the interpreter: the user's own file
        top = norm.split("/", 1)[0]
        if top.endswith(".py"):
            top = top[:-3]
        return top not in self.drop_packages


DEFAULT_RULE = PyFrameRule()


def python_frame(name: str, rule: PyFrameRule = DEFAULT_RULE) -> Frame | None:
    """The frame for a ``python_function`` event name, or None when it is not user code."""
    if name.startswith(_MODULE):
        return module_frame(name[len(_MODULE) :])
    m = _PY_NAME.match(name)
    if m is None:
        return None
    file, line, function = m.group(1), int(m.group(2)), m.group(3)
    if not rule.is_user_file(file):
        return None
    return Frame.python(file, line, function)


def module_frame(label: str) -> Frame:
    """``Linear_0`` -> module "Linear_0" of class "Linear" (Kineto keeps class + per-class counter only)."""
    cls, sep, counter = label.rpartition("_")
    if not sep or not counter.isdigit():
        cls = label
    return Frame.module_(label, cls)


def call_stack_frames(text: str, rule: PyFrameRule = DEFAULT_RULE) -> tuple[Frame, ...]:
    """The user frames of an op's ``Call stack`` arg, outermost first.

    Kineto writes the stack innermost first, ``;``-separated (often with a trailing ``;``):
    ``<built-in function linear>;torch/nn/modules/linear.py(125): forward;nn.Module: Linear_0;
    train.py(54): <module>;``. Each entry goes through the same rule as a ``python_function`` event
    (``python_frame``): framework and interpreter frames are dropped, ``nn.Module: X_N`` entries are modules.
    """
    out: list[Frame] = []
    for entry in reversed(text.split(";")):
        entry = entry.strip()
        if not entry:
            continue
        frame = python_frame(entry, rule)
        if frame is not None:
            out.append(frame)
    return tuple(out)
