"""ONNX Runtime profiles: the JSON that ``SessionOptions.enable_profiling`` makes a session write.

The file is a Chrome-trace array: ``Session`` events (``model_loading_uri``, ``session_initialization``,
``model_run``, ``SequentialExecutor::Execute``) and one ``Node`` event per executed graph node, named
``<node name>_kernel_time`` (``fused <node name>_kernel_time`` where ORT fused nodes), with ``op_name``
(the kernel's op type: ``Gemm``, ``FusedGemm``), ``provider``, shapes and the byte sizes ORT computed
(``activation_size``, ``parameter_size``, ``output_size``).

A node's context comes from its ONNX node when the model is found beside the profile (any ``*.onnx``
in the same folder whose node names cover the profile's; the ``onnx`` package reads it): torch's
dynamo exporter keeps ``pkg.torch.onnx.name_scopes`` (module paths), ``pkg.torch.onnx.class_hierarchy``
(their classes) and ``pkg.torch.onnx.stack_trace`` (the Python lines). Without them, a TorchScript-exporter
name (``/0/fc1/Gemm``) still gives the module path (``0.fc1``). Everything then goes through the one
engine (``attribute.engine``) as host records: the node's modules and user lines as a context
(``Kind.STACK``), the op inside it; ``time_ns`` is each node's self time (a CPU profile).
"""

from __future__ import annotations

import ast
import contextlib
import glob
import math
import os
import re
from collections import Counter
from typing import Any

import msgspec

from ..attribute.engine import build_profile
from ..attribute.records import Kind
from ..attribute.tables import EventTables, us_to_ns
from ..errors import BadInputError
from ..model import Frame, Profile
from ..trust.limits import read_file_capped
from .kineto.pyframes import DEFAULT_RULE
from .registry import Importer, register

__all__ = ["load_onnxruntime", "sniff_onnxruntime"]

_NODE_SUFFIX = "_kernel_time"
_SKIP_SESSION = ("SequentialExecutor::Execute", "ParallelExecutor::Execute")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_GEMMS = frozenset({"Gemm", "FusedGemm", "MatMul", "FusedMatMul", "MatMulInteger", "QLinearMatMul"})


class _Event(msgspec.Struct, frozen=True):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Any = None


_DECODER = msgspec.json.Decoder(list[Any])


def sniff_onnxruntime(path: str, head: bytes) -> bool:
    if head.lstrip()[:1] != b"[":
        return False
    return re.search(rb'"cat"\s*:\s*"(Session|Node)"', head) is not None


def load_onnxruntime(path: str) -> Profile:
    try:
        data = read_file_capped(path)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        items = _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise BadInputError(f"{path}: truncated or malformed JSON; not a complete ONNX Runtime profile") from None
    warnings: Counter[str] = Counter()
    events = [e for e in (_event(i, warnings) for i in items) if e is not None]
    nodes = [e for e in events if e.cat == "Node" and isinstance(e.name, str) and e.name.endswith(_NODE_SUFFIX)]
    if not nodes:
        raise BadInputError(f"{path}: no node events (`<node>_kernel_time`); not an ONNX Runtime profile")
    model = _find_model(path, {_node_name(e.name) for e in nodes}, warnings)
    tables = EventTables(warnings)
    try:
        _records(tables, events, model.nodes if model else {})
        tables.host.finish()
        tables.device.finish()
        meta: dict[str, Any] = {
            "source": {"format": "onnxruntime", "path": os.path.abspath(path), "events": len(items)},
            "framework": "onnxruntime",
        }
        if model is not None:
            meta["onnx_model"] = model.path
        providers = sorted({str(e.args.get("provider")) for e in nodes if isinstance(e.args, dict)} - {"None"})
        if providers:
            meta["providers"] = providers
        tables.events_seen = len(items)
        return build_profile(tables, meta, warnings)
    finally:
        tables.close()


def _event(item: Any, warnings: Counter[str]) -> _Event | None:
    if not isinstance(item, dict):
        warnings["non-object entries skipped"] += 1
        return None
    if item.get("ph") != "X":
        return None
    return _Event(**{f: item.get(f) for f in _Event.__struct_fields__})


def _node_name(event_name: str) -> str:
    return event_name[: -len(_NODE_SUFFIX)].removeprefix("fused ")


# --- the ONNX model: node name -> its context frames ---------------------------
class _Model:
    def __init__(self, path: str, nodes: dict[str, tuple[Frame, ...]]) -> None:
        self.path = path
        self.nodes = nodes


def _find_model(path: str, names: set[str], warnings: Counter[str]) -> _Model | None:
    """The ``*.onnx`` beside the profile whose node names cover most of the profile's (None if none does)."""
    candidates = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(path)), "*.onnx")))
    if not candidates:
        return None
    try:
        import onnx
    except ImportError:
        warnings["an .onnx model is beside the profile but the `onnx` package is missing (pip install onnx)"] += 1
        return None
    best: tuple[int, _Model] | None = None
    for cand in candidates:
        try:
            graph = onnx.load(cand, load_external_data=False).graph
        except Exception:
            warnings["unreadable .onnx files beside the profile skipped"] += 1
            continue
        found = {n.name: n for n in graph.node if n.name in names}
        if found and (best is None or len(found) > best[0]):
            best = (len(found), _Model(cand, {name: _context(n) for name, n in found.items()}))
    return best[1] if best else None


def _context(node: Any) -> tuple[Frame, ...]:
    """Module and user-line frames of an ONNX node from the torch exporter's metadata, outermost first.

    ``name_scopes`` is ``['' (the root module), module paths..., the node]`` and the stack trace holds one
    frame per module's ``forward`` (outermost first): where they pair up, each module is followed by the
    line its ``forward`` was running (as in a live run); otherwise the modules come first, then the lines."""
    props = {p.key: p.value for p in node.metadata_props}
    scopes = _literal_list(props.get("pkg.torch.onnx.name_scopes"))
    classes = _literal_list(props.get("pkg.torch.onnx.class_hierarchy"))
    modules: list[Frame | None] = [None]  # the root module: no frame of its own
    for i, scope in enumerate(scopes[1:-1], start=1):
        cls = classes[i].rsplit(".", 1)[-1] if i < len(classes) else ""
        modules.append(Frame.module_(scope, cls))
    lines = [
        Frame.python(file, int(line), function) if DEFAULT_RULE.is_user_file(file) else None
        for file, line, function in _FRAME.findall(props.get("pkg.torch.onnx.stack_trace", ""))
    ]
    if len(lines) == len(modules):
        paired = [f for pair in zip(modules, lines, strict=True) for f in pair]
    else:
        paired = [*modules, *lines]
    return tuple(f for f in paired if f is not None)


def _literal_list(text: str | None) -> list[str]:
    if not text:
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _scope_frames(name: str) -> tuple[Frame, ...]:
    """TorchScript-exporter names carry the module path: ``/0/fc1/Gemm`` -> module ``0.fc1``."""
    if not name.startswith("/"):
        return ()
    parts = [p for p in name.split("/")[1:-1] if p]
    return (Frame.module_(".".join(parts)),) if parts else ()


# --- records ---------------------------------------------------------------------
def _records(tables: EventTables, events: list[_Event], contexts: dict[str, tuple[Frame, ...]]) -> None:
    host = tables.host.data.extend
    w = tables.warnings
    stacks: dict[str, int] = {}
    for e in events:
        start, dur = us_to_ns(e.ts), us_to_ns(e.dur)
        if start is None or dur is None or not isinstance(e.name, str):
            w["events with a missing or invalid ts/dur"] += 1
            continue
        try:
            thread = tables.thread(e.pid, e.tid)
        except TypeError:
            w["events with unusable pid/tid"] += 1
            continue
        dur = max(dur, 0)
        if e.cat == "Session":
            if e.name in _SKIP_SESSION:
                continue
            kind, label = tables.host_label(Kind.SCOPE, e.name)
            host((thread, start, dur, kind, label, -1, -1, -1, -1, 0, -1))
        elif e.cat == "Node" and e.name.endswith(_NODE_SUFFIX):
            args = e.args if isinstance(e.args, dict) else {}
            node = _node_name(e.name)
            stack = stacks.get(node)
            if stack is None:
                frames = contexts.get(node) or _scope_frames(node)
                stack = stacks[node] = tables.stack(frames) if frames else -1
            if stack >= 0:
                host((thread, start, dur, Kind.STACK, stack, -1, -1, -1, -1, 0, -1))
            op = args.get("op_name")
            label = tables.frame(Frame.op(op if isinstance(op, str) and op else node))
            flops, nbytes = _costs(str(op), args)
            host((thread, start, dur, Kind.OP, label, -1, -1, -1, -1, flops, nbytes))


def _costs(op: str, args: dict[str, Any]) -> tuple[int, int]:
    """(FLOPs, bytes) of one node run: bytes as ORT sized them (inputs, weights, output); FLOPs of GEMMs
    (2·M·N·K from the output shape and the first input's last dimension), else 0."""
    nbytes = 0
    for key in ("activation_size", "parameter_size", "output_size"):
        with contextlib.suppress(TypeError, ValueError):
            nbytes += max(int(args.get(key, 0)), 0)
    flops = 0
    if op in _GEMMS:
        inp, out = _shape(args.get("input_type_shape")), _shape(args.get("output_type_shape"))
        if inp and out:
            flops = 2 * math.prod(out) * inp[-1]
    return (flops if flops < 1 << 62 else 0), (nbytes if 0 < nbytes < 1 << 62 else -1)


def _shape(value: Any) -> list[int] | None:
    """The first tensor shape of ORT's ``[{"float": [8, 64]}, ...]``."""
    if not isinstance(value, list) or not value or not isinstance(value[0], dict):
        return None
    dims = next(iter(value[0].values()), None)
    if isinstance(dims, list) and dims and all(type(d) is int and d >= 0 for d in dims):
        return dims
    return None


register(
    Importer(
        name="onnxruntime",
        description="ONNX Runtime profile (.json from enable_profiling)",
        sniff=sniff_onnxruntime,
        load=load_onnxruntime,
        priority=1,
    )
)
