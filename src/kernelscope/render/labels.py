"""Labels that fit: names shortened to a width, the line number always kept.

Paths lose their middle first (``transformers/…/modeling_owlv2.py:1732 forward``), then the
function name its end; C++ kernel names lose their return type, argument list and template
arguments (``at::native::…::softmax_warp_forward<…>``) unless full names were asked for.
"""

from __future__ import annotations

import re
import textwrap

from ..model import Frame, FrameKind
from ..trust.text import visible

ELLIPSIS = "…"
MIN_WIDTH = 12
LONG_KERNEL = 80
BASE_KEEP = 24  # a file name keeps this much before the function after it is cut


def cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def cut_middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[-tail:]


def shorten_path(path: str, width: int) -> str:
    """``a/b/c/file.py`` → ``a/…/file.py`` → ``…/file.py`` → ``file.py`` → ``…e.py``: the file name goes last."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    if len(parts) > 2:
        cand = f"{parts[0]}/{ELLIPSIS}/{parts[-1]}"
        if len(cand) <= width:
            # put back as many trailing folders as fit
            for k in range(len(parts) - 2, 1, -1):
                longer = f"{parts[0]}/{ELLIPSIS}/" + "/".join(parts[k - 1 :])
                if len(longer) <= width:
                    return longer
            return cand
    if len(parts) > 1:
        cand = f"{ELLIPSIS}/{parts[-1]}"
        if len(cand) <= width:
            return cand
        if len(parts[-1]) <= width:
            return parts[-1]
    return ELLIPSIS + path[-(width - 1) :] if width > 1 else ELLIPSIS


def located(file: str, line: int, rest: str, width: int) -> str:
    """``file:line rest`` in ``width``: the path shrinks first, then ``rest``; ``:line`` stays."""
    loc = f":{line}"
    full = f"{file}{loc}{rest}"
    if len(full) <= width:
        return full
    base = file.rsplit("/", 1)[-1]
    room = width - len(loc) - len(rest)
    if room >= min(len(file), len(base), BASE_KEEP):
        return shorten_path(file, room) + loc + rest
    head = shorten_path(file, max(1, min(len(base), BASE_KEEP, width - len(loc)))) + loc
    left = width - len(head)
    return head + cut_end(rest, left) if left >= 5 else head


_ANON = "(anonymous namespace)::"


def _keep_outer_templates(s: str) -> str:
    """Template arguments nested inside template arguments become ``…``."""
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
            if depth == 2:
                out.append("<…")
            elif depth < 2:
                out.append(ch)
        elif ch == ">":
            depth -= 1
            if depth < 2:
                out.append(ch)
        elif depth < 2:
            out.append(ch)
    return "".join(out)


def _drop_arguments(s: str) -> str:
    """``name<...>(args)`` → ``name<...>``: the last top-level parenthesised group at the end."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, 0, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i]
    return s


_CLONE = re.compile(r"\s*\[clone [^\]]*\]$")
_SIGNATURE = re.compile(r"^\w+(?:<[^()]*>)?\(.*\)$")  # name(args) with no space before "(": C++, not prose
_LAMBDA = re.compile(r"(?:::)?\{lambda\([^{}]*\)#\d+\}|::operator\(\)\(\) const")
_PARAMS = re.compile(r"\((?:[\w:&*<>,\s]|\(\))*\)")
_QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~])")


def _unqualify_arguments(s: str) -> str:
    """Namespaces inside template arguments go (``at::native::MulFunctor`` → ``MulFunctor``)."""
    cut = s.find("<")
    return s if cut < 0 else s[:cut] + _QUALIFIER.sub("", s[cut:])


def _drop_return_type(s: str) -> str:
    """``std::enable_if<…>::type vllm::rms_norm_kernel<…>`` → the part after the last top-level space."""
    angle = paren = 0
    cut = -1
    for i, ch in enumerate(s):
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        elif paren == 0 and ch == "<":  # inside parentheses ``>`` may be a comparison
            angle += 1
        elif paren == 0 and ch == ">":
            angle -= 1
        elif ch == " " and angle == 0 and paren == 0:
            cut = i
    return s[cut + 1 :] if 0 <= cut < len(s) - 1 else s


def short_kernel_name(name: str) -> str:
    """A C++ kernel signature as its qualified name and outer template arguments: no ``void``, no
    argument list, no lambdas or namespaces inside the template arguments, nested template
    arguments as ``…``. Other names are left as they are."""
    s = _CLONE.sub("", name.strip())  # "[clone .kd]": the compiler's copy of the same kernel
    if "::" not in s and not s.startswith("void ") and not _SIGNATURE.match(s):
        return s
    if s.startswith("void "):
        s = s[5:]
    s = _drop_return_type(_drop_arguments(s.replace(_ANON, "")))
    s = _LAMBDA.sub("", s)
    s = _PARAMS.sub("", s)
    out = _keep_outer_templates(_unqualify_arguments(s)).replace("> >", ">>").strip()
    if len(out) > LONG_KERNEL and "<" in out:  # still long: keep only the most telling outer argument
        head, args = out[: out.index("<")], _outer_arguments(out[out.index("<") :])
        telling = max(args, key=lambda a: sum(ch.isalpha() for ch in a), default="")
        out = f"{head}<…{telling}…>" if len(telling) > 3 else f"{head}<…>"
    return out or name


def _outer_arguments(templ: str) -> list[str]:
    """``<a, b<…>, c::d>`` → ``["a", "b", "c"]``: each argument without its own arguments or members."""
    args: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in templ[1:-1]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(cur))
            cur = []
            continue
        if depth == 0 and ch not in "<>":
            cur.append(ch)
    args.append("".join(cur))
    return [a.strip().split("::")[0].replace("…", "") for a in args if a.strip()]


def _inert(text: str, width: int, full_names: bool) -> str:
    """``text`` with control characters made visible (``trust.text``), cut again if that made it too wide."""
    shown = visible(text)
    if shown is text or full_names or len(shown) <= width:
        return shown
    return cut_middle(shown, width)


def frame_label(frame: Frame, width: int, full_names: bool = False) -> str:
    """The label of ``frame`` in at most ``width`` characters (``full_names``: never shortened); control
    characters in names are shown as escapes, never sent."""
    return _inert(_frame_label(frame, width, full_names), width, full_names)


def _frame_label(frame: Frame, width: int, full_names: bool) -> str:
    k = frame.kind
    if k is FrameKind.PYTHON:
        text = located(frame.file, frame.line, f" {frame.name}", width) if not full_names else frame.label()
        return text
    if k is FrameKind.PART:
        rest = " (estimated)"
        if frame.file and not full_names:
            head = f"~{frame.name} @ "
            return head + located(frame.file, frame.line, rest, max(width - len(head), MIN_WIDTH))
        text = frame.label()
    elif k is FrameKind.MODULE:
        text = frame.name if not frame.cls or frame.name.startswith(frame.cls) else f"{frame.name} ({frame.cls})"
    elif k is FrameKind.KERNEL and not full_names:
        text = short_kernel_name(frame.name)
    else:
        text = frame.label()
    return text if full_names else cut_middle(text, width)


def key_label(by: str, key: str, width: int, full_names: bool = False) -> str:
    """A flat view's key in at most ``width`` characters, control characters shown as escapes."""
    return _inert(_key_label(by, key, width, full_names), width, full_names)


def _key_label(by: str, key: str, width: int, full_names: bool) -> str:
    if full_names:
        return key
    if by == "line":
        file, _, line = key.rpartition(":")
        if line.isdigit():
            return located(file, int(line), "", width)
    if by == "function":
        file, _, func = key.rpartition(":")
        if file.endswith(".py") or "/" in file:
            return cut_end(shorten_path(file, max(width - len(func) - 1, min(width, 8))) + ":" + func, width)
    if by == "kernel":
        return cut_middle(short_kernel_name(key), width)
    return cut_middle(key, width)


def prose(text: str, width: int) -> str:
    """Text wrapped at ``width`` on spaces, no trailing blanks (rich's wrapping leaves them)."""
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) if width > 0 else text
