"""The tree in the user's terms: the last step of attribution, the same for live runs and imports.

Pure (``Profile -> Profile``), applied by ``engine`` to every profile it builds. Frames are folded (removed, their
children taking their place under their parent, their own time going to that parent and their calls dropped)
or renamed:

- **Wrapper modules** (``OptimizedModule``, ``DistributedDataParallel``, ``DataParallel``,
  ``FullyShardedDataParallel``) are folded, with their own ``<Wrapper>.forward`` scope; the module they wrap
  is named by its class and its submodules keep the attribute paths the user wrote (``layers.0``, not
  ``_orig_mod.layers.0`` or ``module.layers.0``). What the wrapper itself runs (DDP's broadcast, guards)
  goes to the line that called it.
- **Compiled regions** are named after what the user compiled: a ``Torch-Compiled Region`` becomes
  ``torch.compile(MLP.forward)``, the same name in a live run and an imported trace (the module and the first
  Python frame inside the region). The line of the program's ``torch.compile(...)`` is the region's location
  (``file``/``line``, not part of its label) when the run recorded it (``metadata["compile"]["callables"]``;
  an imported trace has no record of it); Dynamo's
  frame/compile id stays in ``ids`` (recompilations stay apart) but is not shown. The runtime wrappers
  inside it (``CompiledFunction``, ``CompiledFunctionBackward``, ``## Call CompiledFxGraph ##``) are folded,
  and so are regions of frames the run recorded Dynamo compiling to no graph at all (a hook it traced).
- **Modules inside compiled code** get the calls of their region (torch records none there): the graph
  runs each module it traced once per call.
- **Pass-through frames** are folded by one rule (docs/view.md, "What the tree folds"): a Python frame in
  an installed library that, within its parent, is its function's only row holding time, holds no time of
  its own, and holds exactly one call: its children (those holding time) are the lines of one other
  function, or one module. A frame that holds most of its host time (``cpu_time_ns``) itself is doing the
  work, not passing it on, and never folds (transformers' ``image_transforms.py normalize``: 46 ms of its
  own Python around one small helper). (A frame that holds no time at all is judged on all its rows.) Decorators, ``functools.wraps`` wrappers (transformers' ``deprecation.py
  wrapped_func``) and libraries' ``__call__`` trampolines are such frames. Applied from the leaves up, so a
  stack of wrappers folds at once.

Siblings that become the same frame merge (their metrics add up). The naming of compiled regions and the calls
of modules inside them are in ``compiled_regions``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..model import Frame, FrameKind, Profile, ProfileBuilder
from ..model.timeline import Category, Timeline
from .compiled_regions import compile_sites, compiled_module_calls, empty_compiles, named_region
from .records import GRAPH_CALL, TORCH_REGION

# wrapper class -> the attribute that holds the wrapped module
WRAPPERS = {
    "OptimizedModule": "_orig_mod",
    "DistributedDataParallel": "module",
    "DataParallel": "module",
    "FullyShardedDataParallel": "_fsdp_wrapped_module",
}
# runtime wrappers inside a compiled region
REGION_WRAPPERS = frozenset({"CompiledFunction", "CompiledFunctionBackward", GRAPH_CALL})
_TIME = ("time_ns",)  # (every frame holds host time of its own: the interpreter's)


def user_structure(profile: Profile) -> Profile:
    """``profile`` with wrapper modules, region wrappers and pass-through frames folded, regions renamed."""
    n = len(profile)
    if n <= 1:
        return profile
    frames = profile.frames
    fr = profile.frame.tolist()
    par = profile.parent.tolist()
    kids = profile.children
    own_time = np.zeros(n)
    for m in _TIME:
        if m in profile.metrics:
            own_time += np.abs(profile.metrics[m])
    incl_time = np.zeros(n)
    for m in _TIME:
        if m in profile.metrics:
            incl_time += np.abs(profile.inclusive(m))
    # host time: a frame that holds most of its host time itself does the work (a preprocessing function, say),
    # whatever it calls; it passes nothing through
    own_host = np.abs(profile.metrics["cpu_time_ns"]) if "cpu_time_ns" in profile.metrics else np.zeros(n)
    works = 2 * own_host > (np.abs(profile.inclusive("cpu_time_ns")) if "cpu_time_ns" in profile.metrics else 0)
    callables = compile_sites(profile.metadata)
    empty = empty_compiles(profile.metadata)

    # wrapper prefixes per node (attribute paths to strip in its subtree) and the new frame of each node
    strip: list[tuple[str, ...]] = [()] * n
    new_frame: list[Frame | None] = [None] * n  # None: folded into the parent
    for node in range(1, n):  # parents come before children
        f = frames[fr[node]]
        above = strip[par[node]]
        strip[node] = above
        k = f.kind
        if k is FrameKind.MODULE and f.cls in WRAPPERS:
            path = _stripped(f.name, above)
            inner = WRAPPERS[f.cls]
            strip[node] = (*above, f"{path}.{inner}" if path != f.cls and path else inner)
            continue
        if k is FrameKind.SCOPE and f.name.endswith(".forward") and f.name.split(".", 1)[0] in WRAPPERS:
            continue
        if k is FrameKind.REGION and f.name in REGION_WRAPPERS:
            continue
        if k is FrameKind.REGION and f.name == TORCH_REGION:
            if f.ids in empty:
                continue  # a frame Dynamo compiled to no graph at all (a hook it traced): nothing of the user's
            new_frame[node] = named_region(f, profile, node, callables)
            continue
        if k is FrameKind.MODULE and above:
            path = _stripped(f.name, above)
            new_frame[node] = Frame.module_(path or f.cls, f.cls)
            continue
        if k is FrameKind.PART and above and f.module:
            new_frame[node] = Frame.part(f.name, f.file, f.line, _stripped(f.module, above))
            continue
        new_frame[node] = f

    # pass-through frames, from the leaves up (children are numbered after their parents)
    for node in range(n - 1, 0, -1):
        f = new_frame[node]
        if (
            f is None
            or f.kind is not FrameKind.PYTHON
            or own_time[node] > 0
            or works[node]
            or not _library_file(f.file)
        ):
            continue
        if _passes_through(node, f, par, kids, new_frame, incl_time):
            new_frame[node] = None
    return compiled_module_calls(_rebuild(profile, new_frame, par))


def _stripped(path: str, prefixes: Sequence[str]) -> str:
    """An attribute path without the wrappers' attributes (``_orig_mod.layers.0`` -> ``layers.0``). ``prefixes``:
    each wrapper's attribute path to what it wraps, outermost first, in the paths already stripped of the
    wrappers outside it; "" where the wrapped module is the model itself."""
    for prefix in prefixes:
        head = prefix.rsplit(".", 1)[0] if "." in prefix else ""
        if path == prefix:
            path = head
        elif path.startswith(prefix + "."):
            rest = path[len(prefix) + 1 :]
            path = f"{head}.{rest}" if head else rest
    return path


def _effective_children(node: int, kids: list[list[int]], new_frame: list[Frame | None]) -> list[int]:
    out: list[int] = []
    stack = list(reversed(kids[node]))
    while stack:
        c = stack.pop()
        if new_frame[c] is None:
            stack.extend(reversed(kids[c]))
        else:
            out.append(c)
    return out


def _passes_through(
    node: int,
    f: Frame,
    par: list[int],
    kids: list[list[int]],
    new_frame: list[Frame | None],
    incl_time: np.ndarray,
) -> bool:
    """The rule of the module docstring, for one Python frame that holds no time of its own."""
    # "holding time": with time, the rows that hold some; a frame that holds none (ops too short to time, or
    # none at all) is judged on all its rows
    timed = incl_time[node] > 0
    siblings = _effective_children(_shown_parent(node, par, new_frame), kids, new_frame)
    same_fn = [
        s
        for s in siblings
        if (incl_time[s] > 0 or not timed)
        and (g := new_frame[s]) is not None
        and g.kind is FrameKind.PYTHON
        and (g.file, g.name) == (f.file, f.name)
    ]
    if same_fn != [node]:
        return False
    below = [c for c in _effective_children(node, kids, new_frame) if incl_time[c] > 0 or not timed]
    if not below:
        return False
    first = new_frame[below[0]]
    assert first is not None
    if first.kind is FrameKind.MODULE:
        return len(below) == 1
    if first.kind is not FrameKind.PYTHON or (first.file, first.name) == (f.file, f.name):
        return False
    for c in below[1:]:
        g = new_frame[c]
        if g is None or g.kind is not FrameKind.PYTHON or (g.file, g.name) != (first.file, first.name):
            return False
    return True


def _shown_parent(node: int, par: list[int], new_frame: list[Frame | None]) -> int:
    p = par[node]
    while p > 0 and new_frame[p] is None:
        p = par[p]
    return p


@lru_cache(maxsize=4096)
def _library_file(file: str) -> bool:
    """A file of an installed package (recorded relative to site-packages, as Kineto and kernelscope write
    them, or absolute under it), not the program's own: only such frames may be pass-through."""
    if not file or file.startswith("<"):
        return False
    markers = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
    if os.path.isabs(file):
        return any(m in file for m in markers)
    return any(
        entry and ("site-packages" in entry or "dist-packages" in entry) and os.path.isfile(os.path.join(entry, file))
        for entry in sys.path
    )


def _rebuild(profile: Profile, new_frame: list[Frame | None], par: list[int]) -> Profile:
    if all(nf is f for nf, f in zip(new_frame[1:], (profile.frame_of(i) for i in range(1, len(profile))), strict=True)):
        return profile
    b = ProfileBuilder()
    n = len(profile)
    new = [0] * n
    dropped = np.zeros(n, dtype=bool)
    for node in range(1, n):
        f = new_frame[node]
        if f is None:
            new[node] = new[par[node]]
            dropped[node] = True
        else:
            new[node] = b.child(new[par[node]], f)
    shell = b.build(profile.metadata)
    index = np.asarray(new, dtype=np.int64)
    metrics = {}
    for name, col in profile.metrics.items():
        out = np.zeros(len(shell), dtype=np.float64)
        values = np.where(dropped, 0.0, col) if name == "count" else col  # a folded frame's calls are its call's
        np.add.at(out, index, values)
        metrics[name] = out
    if profile.metadata.get("device_run") is False and {"time_ns", "cpu_time_ns"} <= metrics.keys():
        # on a CPU run an op's time is its host self time: the host time of a frame folded into an op (the graph
        # call inside ``CompiledFunctionBackward``) is the op's time too, as it is for every other op
        into_op = dropped & np.fromiter(
            (shell.frame_of(int(i)).kind is FrameKind.OP for i in index), dtype=bool, count=n
        )
        extra = np.where(into_op, profile.metrics["cpu_time_ns"] - profile.metrics["time_ns"], 0.0)
        np.add.at(metrics["time_ns"], index, np.clip(extra, 0.0, None))
    tl = profile.timeline
    if tl is not None:
        # a folded frame's own interval (an import's FRAME row) goes with it: renamed after its parent it would
        # be a second call of the parent (an exported trace re-imported would count it); the rows of what ran
        # in it (runtime calls, device work) move to the frame that takes its place
        tl = tl.select(~(dropped[tl.node] & (tl.category == int(Category.FRAME))))
        tl = Timeline(tracks=tl.tracks, **{**tl.columns(), "node": index[tl.node].astype(np.int32)})
    return shell.replace(metrics=metrics, timeline=tl)
