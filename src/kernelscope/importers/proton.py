"""Proton / hatchet literal profiles (``.hatchet``, Proton's ``.json``).

The literal is a list ``[root, device_info]`` (what Proton writes) or a root node, or a list of
roots (hatchet's ``from_literal``). A node is ``{"frame": {"name", "type"}, "metrics": {...},
"children": [...]}``. Proton's viewer calls ``update_inclusive_columns()`` on load, so literal
metrics are per-node (exclusive); a metric named ``"... (inc)"`` is inclusive and is turned into
exclusive values here (node minus its children, clamped at 0).

What ``proton-viewer`` does on load (its ``remove_frames``), this importer does too: a node named
``__proton_launch_metadata`` (or ``__proton_launch_metadata:...``, Proton's scope around
launch-metadata hooks) is dropped with everything under it, so is a node without metrics or
children, and so is a node all of whose children were dropped (its own metrics with it);
``flops8``/``flops16``/``flops32``/``flops64`` stay separate metrics and, where a node has no plain
``flops``, their sum is its ``flops``; ``device_info`` becomes ``metadata["devices"]`` entries
(``{"device": "cuda:0", "type": "CUDA", "index": 0, "arch", "num_sms", ...}``) that the exporters
write back. Hatchet's internal columns (``_hatchet_nid``, ...) are not metrics, and when a node has
both ``m`` and ``m (inc)`` (hatchet's ``to_literal``, our hatchet export) ``m`` is its value.

Frames: literals written by kernelscope carry the frame's kind and fields (``ks_kind``,
``ks_name``, ``file``, ``line``, ``cls``, ``module``, ``device``, ``stream``) and come back exactly.
Otherwise a name ``path/file.py:function@line`` becomes a python frame; a node that carries a
device (``device_id``/``device_type``) or is a leaf under a scope becomes a kernel; other nodes
become scopes.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from ..errors import BadInputError
from ..model import Frame, FrameKind, Profile, ProfileBuilder
from ..model.devices import from_proton
from ..model.devices import to_json as devices_json
from ..model.frames import ALLOWED_CHILDREN
from ..trust.limits import read_file_capped
from .registry import Importer, register

__all__ = ["load_proton", "metric_of", "sniff_proton"]

_PY = re.compile(r"^(.+\.py):(.+)@(\d+)$")
_TIME = re.compile(r"^time \((ns|us|ms|s)\)$")
_TIME_SCALE = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_SKIP_METRICS = frozenset({"device_id", "device_type"})
_FLOPS_WIDTH = re.compile(r"^flops(\d+)$")
LAUNCH_METADATA = "__proton_launch_metadata"  # triton.profiler.hook.COMPUTE_METADATA_SCOPE_NAME
_KINDS = {k.value: k for k in FrameKind}
# frame fields a kernelscope-written literal carries (see render/exporters/_tree.frame_fields)
_FIELDS = {"file": str, "line": int, "cls": str, "module": str, "device": str, "stream": int, "ids": str}


def sniff_proton(path: str, head: bytes) -> bool:
    start = head.lstrip()[:1]
    if start not in (b"{", b"["):
        return False
    return b'"frame"' in head and (b'"metrics"' in head or b'"children"' in head) and b'"traceEvents"' not in head


def metric_of(raw: str) -> tuple[str, float, bool] | None:
    """A literal metric name -> (kernelscope metric, scale to apply, inclusive?); None to drop it."""
    name = raw.strip()
    inclusive = name.endswith("(inc)")
    if inclusive:
        name = name[: -len("(inc)")].strip()
    low = name.lower()
    if low in _SKIP_METRICS or low.startswith("_"):
        return None
    m = _TIME.match(low)
    if m is not None:
        return "time_ns", _TIME_SCALE[m.group(1)], inclusive
    if low == "time":
        return "time_ns", 1.0, inclusive
    if low == "count":
        return "count", 1.0, inclusive
    if low == "flops" or _FLOPS_WIDTH.match(low):
        return low, 1.0, inclusive
    if low == "bytes":
        return "bytes", 1.0, inclusive
    safe = re.sub(r"[^a-z0-9_]+", "_", low).strip("_")
    return (safe or "metric"), 1.0, inclusive


def load_proton(path: str) -> Profile:
    try:
        data = read_file_capped(path)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"{path}: malformed JSON ({exc}); not a readable Proton/hatchet profile") from None
    except RecursionError:
        raise BadInputError(f"{path}: JSON nested too deeply for a Proton/hatchet profile") from None
    roots, device_info = _split(path, doc)
    return build_proton(roots, device_info, path)


def _split(path: str, doc: Any) -> tuple[list[dict[str, Any]], Any]:
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        raise BadInputError(f"{path}: expected a hatchet literal (a node or a list of nodes)")
    roots = [item for item in doc if isinstance(item, dict) and "frame" in item]
    extra = [item for item in doc if not (isinstance(item, dict) and "frame" in item)]
    if not roots:
        raise BadInputError(f"{path}: no hatchet nodes (objects with a 'frame'); not a Proton/hatchet profile")
    return roots, (extra[0] if extra else None)


def build_proton(roots: list[dict[str, Any]], device_info: Any, path: str = "<literal>") -> Profile:
    """Build from decoded literal roots (``Frame`` per node, exclusive metrics)."""
    b = ProfileBuilder()
    warnings: dict[str, int] = {}
    inclusive_cols: set[str] = set()
    scale: dict[str, tuple[str, float, bool]] = {}
    # iterative DFS: deep stacks must not hit the recursion limit
    # inclusive metrics need children's values: remember (node, metric, value) and subtract later
    inc_values: dict[tuple[int, str], float] = {}
    proton_root = _is_proton_root(roots)
    kept = _viewer_kept_children(roots)
    stack: list[tuple[Any, int, bool]] = [
        (r, 0, True) for r in reversed(roots) if not isinstance(r, dict) or id(r) in kept
    ]
    while stack:
        item, parent, is_root = stack.pop()
        if not isinstance(item, dict):
            warnings["non-object nodes skipped"] = warnings.get("non-object nodes skipped", 0) + 1
            continue
        frame_data = item.get("frame")
        metrics = item.get("metrics")
        if not isinstance(metrics, dict):
            metrics = {}
        children = kept.get(id(item), [])
        if is_root and proton_root:
            node = 0  # Proton's ROOT frame is our root
        elif is_root and (_ks_kind(frame_data) is FrameKind.ROOT or _type(frame_data) == "root"):
            node = 0  # kernelscope's own <root>
        else:
            frame = _frame(frame_data, metrics, bool(children), parent)
            if frame.kind not in ALLOWED_CHILDREN[b.frame_of(parent).kind]:
                why = "frames that cannot sit under their parent skipped (with what is below them)"
                warnings[why] = warnings.get(why, 0) + 1
                continue
            node = b.child(parent, frame)
        has_flops = any(isinstance(k, str) and k.strip().lower() == "flops" for k in metrics)
        for raw, value in metrics.items():
            if not isinstance(raw, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            spec = scale.get(raw)
            if spec is None:
                found = metric_of(raw)
                if found is None:
                    continue
                spec = scale[raw] = found
            metric, factor, inclusive = spec
            if inclusive and _has_exclusive(raw, metrics):
                continue  # hatchet writes both; the exclusive column is the node's own value
            v = float(value) * factor
            if not math.isfinite(v):
                warnings["non-finite metric values dropped"] = warnings.get("non-finite metric values dropped", 0) + 1
                continue
            targets = [metric] if has_flops or not _FLOPS_WIDTH.match(metric) else [metric, "flops"]
            for target in targets:
                b.ensure_metric(target)
                if inclusive:
                    inclusive_cols.add(target)
                    key = (node, target)
                    inc_values[key] = inc_values.get(key, 0.0) + v
                elif v:
                    b.add(node, target, v)
        for kid in reversed(children):
            stack.append((kid, node, False))
    if inc_values:
        _add_exclusive_from_inclusive(b, inc_values)
    meta: dict[str, Any] = {"source": {"format": "proton", "path": path}, "import_warnings": warnings}
    devices = devices_json(from_proton(device_info))
    if devices:
        meta["devices"] = devices
    if inclusive_cols:
        meta["source"]["inclusive_metrics_converted"] = sorted(inclusive_cols)
    return b.build(meta)


def _is_proton_root(roots: list[dict[str, Any]]) -> bool:
    """Proton writes one root frame named ``ROOT``; it maps onto our root node."""
    if len(roots) != 1:
        return False
    frame = roots[0].get("frame")
    name = frame.get("name") if isinstance(frame, dict) else None
    return isinstance(name, str) and name.upper() == "ROOT"


def _viewer_kept_children(roots: list[Any]) -> dict[int, list[Any]]:
    """proton-viewer's ``remove_frames``, without recursion: ``id(node) -> kept children`` for kept nodes."""
    order: list[Any] = []
    stack: list[tuple[Any, bool]] = [(r, False) for r in roots]
    while stack:
        item, done = stack.pop()
        if done:
            order.append(item)
            continue
        stack.append((item, True))
        kids = item.get("children") if isinstance(item, dict) else None
        if isinstance(kids, list):
            stack.extend((kid, False) for kid in kids)
    kept: dict[int, list[Any]] = {}
    for item in order:  # children come before their parent
        if not isinstance(item, dict):
            continue
        name = _name(item.get("frame"))
        if name == LAUNCH_METADATA or name.startswith(f"{LAUNCH_METADATA}:"):
            continue
        kids = item.get("children")
        kids = kids if isinstance(kids, list) else []
        metrics = item.get("metrics")
        if not kids and not (isinstance(metrics, dict) and metrics):
            continue
        left = [k for k in kids if not isinstance(k, dict) or id(k) in kept]
        if kids and not left:
            continue
        kept[id(item)] = left
    return kept


def _name(data: Any) -> str:
    name = data.get("name") if isinstance(data, dict) else data
    if not isinstance(name, str):
        name = "<unnamed>" if name is None else str(name)
    return name


def _has_exclusive(raw: str, metrics: dict[str, Any]) -> bool:
    base = raw.strip()[: -len("(inc)")].strip()
    return base in metrics


def _ks_kind(data: Any) -> FrameKind | None:
    kind = data.get("ks_kind") if isinstance(data, dict) else None
    return _KINDS.get(kind) if isinstance(kind, str) else None


def _frame(data: Any, metrics: dict[str, Any], has_children: bool, parent: int) -> Frame:
    name = _name(data)
    kind = _ks_kind(data)
    if kind is not None and kind is not FrameKind.ROOT:
        fields: dict[str, Any] = {}
        for key, typ in _FIELDS.items():
            value = data.get(key)
            if isinstance(value, typ) and not isinstance(value, bool):
                fields[key] = value
        raw = data.get("ks_name", name)
        return Frame(kind, raw if isinstance(raw, str) else name, **fields)
    typed = _typed_frame(data, name)
    if typed is not None:
        return typed
    m = _PY.match(name)
    if m is not None:
        return Frame.python(m.group(1), int(m.group(3)), m.group(2))
    if has_children:
        return Frame.scope(name)  # kernels are leaves (only estimated parts may sit under one)
    if "device_id" in metrics or "device_type" in metrics:
        dev = metrics.get("device_id")
        if isinstance(dev, str) and dev.isdigit():
            dev = int(dev)
        device = f"cuda:{int(dev)}" if isinstance(dev, (int, float)) and math.isfinite(dev) else ""
        return Frame.kernel(name, device)
    return Frame.kernel(name) if parent != 0 else Frame.scope(name)


def _type(data: Any) -> Any:
    return data.get("type") if isinstance(data, dict) else None


def _typed_frame(data: Any, name: str) -> Frame | None:
    """Hatchet literals that kernelscope wrote before frames carried ``ks_*`` fields: ``type`` is the kind."""
    kind = data.get("type") if isinstance(data, dict) else None
    if kind in ("op", "kernel"):
        return Frame.op(name) if kind == "op" else Frame.kernel(name)
    file, line = (data.get("file"), data.get("line")) if isinstance(data, dict) else (None, None)
    if kind == "python" and isinstance(file, str) and isinstance(line, int):
        prefix = f"{file}:{line} "
        return Frame.python(file, line, name[len(prefix) :] if name.startswith(prefix) else name)
    return None


def _add_exclusive_from_inclusive(b: ProfileBuilder, inc_values: dict[tuple[int, str], float]) -> None:
    kids_sum: dict[tuple[int, str], float] = {}
    for (node, metric), value in inc_values.items():
        if node == 0:
            continue
        key = (b.parent_of(node), metric)
        kids_sum[key] = kids_sum.get(key, 0.0) + value
    for (node, metric), value in inc_values.items():
        own = value - kids_sum.get((node, metric), 0.0)
        if own > 0:
            b.add(node, metric, own)


register(
    Importer(
        name="proton",
        description="Proton/hatchet profile (.hatchet, Proton .json)",
        sniff=sniff_proton,
        load=load_proton,
    )
)
