"""Where the user wrote ``torch.compile`` and which line's call made Dynamo compile, for naming compiled regions
and placing compile findings on the user's code.

- :class:`CompileSites` keeps, per compiled callable, its name as the user knows it (``MLP.forward``,
  ``train_step``) and the user line of its ``torch.compile(...)`` call or ``@torch.compile`` decorator,
  keyed by the code that Dynamo compiles (its file and ``def`` line: what Dynamo's compilation metrics
  name). It wraps the public ``torch.compile`` while active (the callable is passed through untouched and
  what ``torch.compile`` returns is returned as is); a call already under way when it starts (the session
  starts the capture from inside the program's first ``torch.compile``) is read off the stack.
- :func:`call_site` is the user line whose call made Dynamo compile (read when a compilation starts).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ...attribute.userframes import display_path, is_user_file


@dataclass(frozen=True)
class CompiledCallable:
    """One callable passed to ``torch.compile``: what the user calls it and where they compiled it."""

    name: str  # MLP.forward, train_step
    def_file: str  # the compiled code's file and def line (display paths: Dynamo's metrics' keys)
    def_line: int
    file: str  # the torch.compile(...) call or decorator line
    line: int


def describe(target: Any) -> tuple[str, str, int] | None:
    """(name, code file, def line) of what Dynamo will compile for ``target``: a module's ``forward``, a
    function, a bound method. None for what has no Python code (a builtin)."""
    fn = target
    forward = getattr(type(target), "forward", None)
    if forward is not None and hasattr(target, "named_modules"):  # an nn.Module instance: its forward
        fn = forward
    fn = getattr(fn, "__func__", fn)
    fn = _unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    qual = getattr(code, "co_qualname", None) or getattr(fn, "__qualname__", None) or code.co_name
    return str(qual).replace(".<locals>", ""), display_path(code.co_filename), int(code.co_firstlineno)


def _unwrap(fn: Any) -> Any:
    seen = 0
    while hasattr(fn, "__wrapped__") and seen < 16:
        fn = fn.__wrapped__
        seen += 1
    return fn


def user_line(frame: FrameType | None) -> tuple[str, int] | None:
    """The innermost user frame from ``frame`` outwards: (display path, line)."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return display_path(frame.f_code.co_filename), int(frame.f_lineno or 0)
        frame = frame.f_back
    return None


def call_site() -> tuple[str, int]:
    """The user line whose call is being compiled (the innermost user frame on the stack), or ("", 0)."""
    return user_line(sys._getframe(1)) or ("", 0)


class CompileSites:
    """Records ``torch.compile`` call sites while installed; see the module docstring."""

    def __init__(self) -> None:
        self.callables: dict[tuple[str, int], CompiledCallable] = {}
        self._torch: Any = None
        self._original: Any = None
        self._wrapper: Any = None

    def install(self, torch: Any) -> None:
        self._note_call_under_way(sys._getframe(1))
        original = torch.compile
        sites = self

        @functools.wraps(original)
        def compile(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1)
            target = args[0] if args else kwargs.get("model")
            if target is not None:
                sites.note(target, caller)
            else:  # @torch.compile(mode=...): the decorator is applied by what torch.compile returns
                out = original(*args, **kwargs)
                if callable(out):
                    return _Decorator(out, sites, caller)
                return out
            return original(*args, **kwargs)

        self._torch, self._original, self._wrapper = torch, original, compile
        torch.compile = compile

    def remove(self) -> None:
        if self._wrapper is not None and self._torch.compile is self._wrapper:
            self._torch.compile = self._original  # never undo a rebinding the program made after ours
        self._torch = self._original = self._wrapper = None

    def note(self, target: Any, caller: FrameType | None) -> None:
        try:
            described = describe(target)
            where = user_line(caller)
        except Exception:  # a debugging aid: never break the program's torch.compile
            return
        if described is None or where is None:
            return
        name, def_file, def_line = described
        self.callables.setdefault((def_file, def_line), CompiledCallable(name, def_file, def_line, *where))

    def _note_call_under_way(self, frame: FrameType | None) -> None:
        """The program's first ``torch.compile`` started the capture: find its target and line on the stack."""
        while frame is not None:
            back = frame.f_back
            if (
                frame.f_code.co_name == "compile"
                and back is not None
                and is_user_file(back.f_code.co_filename)
                and "args" in frame.f_locals
            ):
                args = frame.f_locals.get("args") or ()
                kwargs = frame.f_locals.get("kwargs") or {}
                target = args[0] if args else kwargs.get("model")
                if target is not None:
                    self.note(target, back)
                return
            frame = back

    def lookup(self, file: str, line: int) -> CompiledCallable | None:
        return self.callables.get((file, line))


class _Decorator:
    """What ``torch.compile(mode=...)`` returns, recording the function it is then applied to."""

    def __init__(self, inner: Any, sites: CompileSites, caller: FrameType | None) -> None:
        self._inner = inner
        self._sites = sites
        self._caller = caller

    def __call__(self, fn: Any) -> Any:
        self._sites.note(fn, self._caller)
        self._caller = None
        return self._inner(fn)
