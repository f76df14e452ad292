"""One window of a live torch run -> the normalised records of ``attribute.tables``.

Input is ``prof.profiler.kineto_results``: ``experimental_event_tree()`` for host events (FIELD-NOTES)
and, on a CUDA run, the flat event list for device activity. The engine (``attribute.engine``) then
nests, re-homes backward work and joins kernels exactly as it does for an imported trace; what only
a live run knows is written into the records here:

- a Python call made from a user file becomes a ``python(file, calling line, function)`` row over the
  call's time (the tracer knows each call's *caller*: the issuing line, not the def line); library
  calls add nothing; an ``nn.Module`` call adds a ``module(attribute path, class)`` row;
- an op called straight from a user function with no Python call in between gets that function's
  row (its def line: the line is not known);
- ops, compiled regions and steps get the labels every source gets (``EventTables.host_label``);
  ranges in the user scope (``record_function``: Kineto's ``user_annotation``) are scopes; a range
  that outlives the call that opened it (torch's tree makes it a leaf of that call) starts where the
  call ends, so that it holds what ran inside it;
- ops run by autograd carry a forward-thread mark, as Kineto's ``Fwd thread id`` does;
- FLOPs and bytes come from the input shapes (``attribute.costs``) when the window recorded them.

Objects are read duck-typed, so tests can feed literals with the same attributes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..attribute.costs import FLOP_RULES, op_bytes, op_flops
from ..attribute.records import BACKWARD_PREFIX, Kind, is_comm_kernel
from ..attribute.tables import EventTables
from ..attribute.userframes import display_path, is_user_file
from ..model import Frame
from .continued import Chain, Split, continued_events
from .threads import Where

# c10::ScalarType codes as torch's profiler records a dtype argument
SCALAR_TYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
}
CAST_OP = "aten::_to_copy"
_NONE = -1
_FAR = 1 << 62
# The session's own work (collect/torch_live.py): a window change where the program called a torch function,
# a module or step(). Its time is taken out of the line it interrupted.
_SESSION_FILE = os.path.join("kernelscope", "collect", "torch_live.py")
_OWN_WORK = frozenset({"_checkpoint", "_close_window", "_change"})


class TorchEvents:
    """Writes each window's events into ``tables``; keeps what the records cannot carry (the dtypes of a
    cast, the scopes whose metrics the program passed) for ``watched`` nodes to pick up after a fold."""

    def __init__(self, tables: EventTables, module_path: Callable[[int], tuple[str, str] | None]) -> None:
        self.tables = tables
        self.module_path = module_path
        self.pid = os.getpid()
        self._py: dict[tuple[str, int, str], int] = {}  # (file, line, function) -> label, or _NONE
        self._user: dict[str, bool] = {}
        self._ops: dict[str, tuple[Kind, int]] = {}
        self._tags: dict[Any, str] = {}
        self._kinds: dict[type, str] = {}  # torch's extra-fields type -> the event's tag
        self._user_scope = _user_scope_value()
        self.casts: dict[tuple[int, int], tuple[str, str]] = {}  # (thread, start) -> (from, to), this window
        self.cast_label = tables.frame(Frame.op(CAST_OP))
        self.regions = 0  # compiled regions met (compiled code ran in this window)
        self._session_files: set[str] = set()
        # the latest run of a line per (thread, file, function), for frames that run on into the next window
        self._line_runs: dict[tuple[int, str, str], tuple[int, set[Any]]] = {}

    def _tag(self, ev: Any) -> str:
        tag = ev.tag
        name = self._tags.get(tag)
        if name is None:
            name = self._tags[tag] = tag.name
        return name

    def _kind(self, ev: Any, ex: Any) -> str:
        """The tag of an event whose field type is not known yet (torch's field types are remembered)."""
        tag = self._tag(ev)
        if type(ex).__module__.startswith("torch"):  # (test doubles share one type across tags)
            self._kinds[type(ex)] = tag
        return tag

    def _python(self, file: str, line: int, function: str) -> int:
        key = (file, line, function)
        label = self._py.get(key)
        if label is None:
            if function.startswith("torch_dynamo_resume_in_"):
                from .compile.provenance import original_function

                function = original_function(function)
            label = self.tables.frame(Frame.python(display_path(file), line, function)) if is_user_file(file) else _NONE
            self._py[key] = label
        return label

    def _op(self, name: str) -> tuple[Kind, int]:
        hit = self._ops.get(name)
        if hit is None:
            hit = self._ops[name] = self.tables.host_label(Kind.OP, name)
        return hit

    # --- host events -------------------------------------------------------
    def add(
        self,
        roots: Iterable[Any],
        *,
        shapes: bool,
        cuda: bool,
        compiling: tuple[tuple[int, int], ...] = (),
        continued: Chain = (),
        split: Split | None = None,
        thread_functions: Mapping[int, Any] | None = None,
    ) -> int:
        """Write one window's event tree; returns the number of events read. ``continued``: the stack when
        the window opened, with the frames that ran on from the last window (their rows count no call).
        ``split``: the program's ``record_function`` ranges split at the window's edges (continued.py).
        ``thread_functions``: torch's thread id -> the function of a thread whose ops have no Python caller
        in this window (collect/threads.py): its ops are placed under it, as an op called from a function."""
        t = self.tables
        host = t.host.data.extend
        thread_of = t.thread
        pid = self.pid
        tags = self._tags
        user_files = self._user
        session_files = self._session_files
        PYTHON, MODULE, OP, MEMORY = Kind.PYTHON, Kind.MODULE, Kind.OP, Kind.MEMORY
        OVERHEAD = Kind.OVERHEAD
        roots = list(roots)
        top = {id(r) for r in roots}

        def tag_of(ev: Any) -> str:
            return tags.get(ev.tag) or self._tag(ev)

        ran_on = continued_events(roots, continued, tag_of)
        # per range name: where each range begun again at the open starts its row, whether it counts a call
        pending = split.starts(roots, tag_of) if split else None
        # the rows of ranges ended at the stop, and of any range of those names: held to the end (``_ran_to_end``)
        held: list[tuple[int, ...]] | None = [] if split and split.suspended else None
        suspended = split.suspended if split else ()
        # (event, label of the innermost row on its path, the parent PyCall's fields, inside backward,
        #  end of the innermost row on its path)
        fns = thread_functions or {}
        stack: list[tuple[Any, int, Any, int, int]] = [
            (r, _NONE, fns.get(r.start_tid) if fns else None, 0, _FAR) for r in reversed(roots)
        ]
        events = 0
        threads: dict[int, int] = {}
        # per calling frame (its PyCall's fields): the line of its latest run and the callees that run called
        runs: dict[int, tuple[int, set[Any]]] = {}
        ran_on_fns: set[int] = set()  # calling frames that ran on from the last window: their runs go on too
        kinds = self._kinds
        user_scope = self._user_scope
        while stack:
            ev, last, user_fn, bw, bound = stack.pop()
            events += 1
            try:  # (one read of torch's fields tells the event's tag too: its type is one per tag)
                ex = ev.extra_fields
                tag = kinds.get(type(ex)) or self._kind(ev, ex)
            except TypeError:  # a field type torch's bindings cannot hand over
                ex, tag = None, self._tag(ev)
            if tag == "Allocation":  # a leaf
                size = ex.alloc_size
                if size > 0:
                    th = threads.get(ev.start_tid)
                    if th is None:
                        th = threads[ev.start_tid] = thread_of(pid, ev.start_tid)
                    host((th, ev.start_time_ns, 0, MEMORY, -1, -1, -1, -1, -1, int(size), -1))
                continue
            children = ev.children
            if tag == "PyCall" or tag == "PyCCall":
                caller = ex.caller
                label = _NONE
                try:
                    file = caller.file_name
                    user = user_files.get(file)
                    if user is None:
                        user = user_files[file] = is_user_file(file)
                        if file.endswith(_SESSION_FILE):
                            session_files.add(file)
                    if file in session_files and tag == "PyCall" and ex.callsite.function_name in _OWN_WORK:
                        # the session opening, closing or folding a window: kernelscope's time, not the line's
                        th = threads.get(ev.start_tid)
                        if th is None:
                            th = threads[ev.start_tid] = thread_of(pid, ev.start_tid)
                        host((th, ev.start_time_ns, ev.duration_time_ns, OVERHEAD, -1, -1, -1, -1, -1, 0, -1))
                        if pending:  # the program's ranges that the session began again under this window
                            self._resumed_ranges(ev, th, pending, held, suspended)
                        continue
                    if user:  # most calls come from library code: read the line only for user files
                        label = self._python(file, caller.line_number, caller.function_name)
                        if (
                            label >= 0
                            and tag == "PyCall"
                            and id(ev) in top
                            and ex.callsite.function_name == t.frames[label].name
                        ):
                            # a frame already running when recording began reports itself, at that
                            # moment's line, as its caller: a stale line, not a call site
                            label = _NONE
                except UnicodeDecodeError:  # torch can hand back undecodable names (dynamo frames)
                    label = _NONE
                mod = ex.module if tag == "PyCall" else None
                if (label >= 0 and label != last) or mod is not None:  # a row: read where and when
                    th = threads.get(ev.start_tid)
                    if th is None:
                        th = threads[ev.start_tid] = thread_of(pid, ev.start_tid)
                    start = ev.start_time_ns
                    dur = ev.duration_time_ns
                    calls = (
                        -1 if ran_on and (start, ev.start_tid) in ran_on else 0
                    )  # (a frame running on from the last window: no call)
                    if label >= 0 and label != last:
                        # (a builtin call and the LineMode's __torch_function__ inside it report one line)
                        # a call that runs no torch op (`self.rnn` looking the module up) is not a run of the
                        # line: its calls count the line's runs, not the Python calls it makes
                        line_calls = calls if calls < 0 or mod is not None or _runs_torch(ev) else -1
                        if calls < 0:  # a call running on from the last window: its line's run goes on, counted there
                            runs[id(user_fn)] = self._line_runs[(ev.start_tid, file, caller.function_name)] = (
                                label,
                                {_callee(ev, ex, tag, mod)},
                            )
                        elif line_calls == 0:
                            line_calls = _line_run(
                                runs,
                                self._line_runs,
                                id(user_fn),
                                (ev.start_tid, file, caller.function_name),
                                id(user_fn) in ran_on_fns,
                                label,
                                _callee(ev, ex, tag, mod),
                            )
                        host((th, start, dur, PYTHON, label, -1, -1, -1, -1, line_calls, -1))
                        last = label
                        bound = start + dur
                    if mod is not None:
                        info = self.module_path(mod.self_ptr)
                        path, cls = info if info is not None else (mod.cls_name, mod.cls_name)
                        last = t.frame(Frame.module_(path, cls))
                        host((th, start, dur, MODULE, last, -1, -1, -1, -1, calls, -1))
                        bound = start + dur
                fn = ex if tag == "PyCall" else None  # its callsite is read only if an op sits right below
                if fn is not None and ran_on and (ev.start_time_ns, ev.start_tid) in ran_on:
                    ran_on_fns.add(id(fn))
                if children:
                    stack.extend((c, last, fn, bw, bound) for c in reversed(children))
                continue
            if tag != "TorchOp":
                continue  # Kineto/backend records: device work comes from the flat event list
            try:
                name: str = ev.name
            except UnicodeDecodeError:  # seen with torch.compile on 2.13: a corrupt name
                name = "<undecodable op name>"
            start = ev.start_time_ns
            if compiling and any(a <= start <= b for a, b in compiling):
                continue  # torch.compile compiling inside a window (a lazy backward): compile metrics say it
            if name.endswith(" (dynamo_timed)") or (
                compiling
                and "compile" in name
                and any(start < b and start + ev.duration_time_ns > a for a, b in compiling)
            ):  # torch.compile's phase timers: not ops of the program, transparent
                if children:
                    stack.extend((c, last, user_fn, bw, bound) for c in reversed(children))
                continue
            th = threads.get(ev.start_tid)
            if th is None:
                th = threads[ev.start_tid] = thread_of(pid, ev.start_tid)
            dur = ev.duration_time_ns
            end = start + dur
            if end > bound and not children:
                # a range opened inside the call that opened it (`with record_function(...)` at a user
                # line: torch's tree has it as a leaf of that call): it starts where the call's row ends
                start, dur = bound, end - bound
            scope = ex.scope  # (by value: reading an enum's name from torch's bindings costs twice as much)
            value = getattr(scope, "value", None)
            if (value == user_scope) if value is not None else (scope.name == "USER_SCOPE"):
                # record_function / a C++ user scope: a scope, as Kineto's `user_annotation` (nests by time)
                label = self._range_row(th, name, start, end, pending, held, suspended)
                if children:
                    stack.extend((c, label, None, bw, end) for c in reversed(children))
                continue
            if user_fn is not None:
                # an op called straight from a user function (`x + y` without a Python-level operator):
                # the function is known, not the line: its def line
                try:
                    site = user_fn.callsite
                    fl = self._python(site.file_name, site.line_number, site.function_name)
                except UnicodeDecodeError:
                    fl = _NONE
                if fl >= 0 and fl != last:
                    # (no call counted for a thread's function, for a thread not traced yet, nor for a function
                    # that ran on from the last window: torch gives its line at the window's start, not its def)
                    counted = type(user_fn) is not Where and id(user_fn) not in ran_on_fns
                    host((th, start, dur, PYTHON, fl, -1, -1, -1, -1, 0 if counted else -1, -1))
            kind, label = self._op(name)
            if name.startswith(BACKWARD_PREFIX):
                bw = 1
            seq = ex.sequence_number
            flops = 0
            nbytes = -1
            if shapes and kind is OP:
                inputs = ex.inputs
                dims = _shapes(inputs)
                if name in FLOP_RULES:
                    flops = int(op_flops(name, dims, inputs) or 0)
                nb = op_bytes(name, dims, _itemsizes(inputs))
                if nb is not None:
                    nbytes = int(nb)
                if name == CAST_OP:
                    self._record_cast(th, start, inputs)
            if kind is Kind.REGION:
                self.regions += 1
            corr = ev.correlation_id if cuda else -1
            host((th, start, dur, kind, label, -1, corr or -1, seq if seq >= 0 else -1, bw, flops, nbytes))
            if children:
                stack.extend((c, label, None, bw, start + dur) for c in reversed(children))
        if held:
            _ran_to_end(held, roots, host)
        t.events_seen += events
        t.host.maybe_spill()
        return events

    def _range_row(
        self,
        thread: int,
        name: str,
        start: int,
        end: int,
        pending: dict[str, list[tuple[int, bool]]] | None,
        held: list[tuple[int, ...]] | None,
        suspended: tuple[str, ...],
    ) -> int:
        """The row of a ``record_function`` range; returns its label. One the session began again as the window
        opened (``pending``) starts where the frame that entered it starts, and counts no call if it ran on
        from the last window; one of a name ended at the stop is held for ``_ran_to_end``."""
        kind, label = self.tables.host_label(Kind.SCOPE, name)
        calls = 0
        starts = pending.get(name) if pending else None
        if starts:
            s0, ran = starts.pop(0)
            calls = -1 if ran else 0
            if 0 <= s0 < start:
                start = s0
        row = (thread, start, end - start, kind, label, -1, -1, -1, -1, calls, -1)
        if held is not None and name in suspended:
            held.append(row)
        else:
            self.tables.host.data.extend(row)
        return label

    def _resumed_ranges(
        self,
        own: Any,
        thread: int,
        pending: dict[str, list[tuple[int, bool]]],
        held: list[tuple[int, ...]] | None,
        suspended: tuple[str, ...],
    ) -> None:
        """The session's own call ``own`` began ranges of the program again (safepoint.Ranges.resume): torch's
        tree has them as leaves below it, but they are the program's (``_range_row``)."""
        stack = [own]
        while stack and any(pending.values()):
            ev = stack.pop()
            stack.extend(ev.children)
            if (self._tags.get(ev.tag) or self._tag(ev)) != "TorchOp":
                continue
            try:
                name = ev.name
            except UnicodeDecodeError:
                continue
            if pending.get(name):
                end = ev.start_time_ns + ev.duration_time_ns
                self._range_row(thread, name, ev.start_time_ns, end, pending, held, suspended)

    def _record_cast(self, thread: int, start: int, inputs: Any) -> None:
        """A dtype conversion; the line that asked for it is known once the fold placed it."""
        if len(inputs) < 2 or type(inputs[1]) is not int:
            return
        src = str(getattr(inputs[0], "dtype", "")).removeprefix("torch.")
        dst = SCALAR_TYPES.get(inputs[1])
        if src and dst is not None and src != dst:
            self.casts[(thread, start)] = (src, dst)

    # --- device events -----------------------------------------------------
    def add_device(self, events: Iterable[Any]) -> None:
        """Kernels, copies and sets from Kineto's flat list, joined to their op by correlation id."""
        t = self.tables
        device = t.device.data.extend
        n = len(t.device)
        for e in events:
            name = e.name()
            lower = name.lower()
            kind = Kind.MEMCPY if "memcpy" in lower else Kind.MEMSET if "memset" in lower else Kind.KERNEL
            if kind is Kind.KERNEL and is_comm_kernel(name):
                kind = Kind.COMM
            corr = int(e.linked_correlation_id())
            row = (int(e.start_ns()), int(e.duration_ns()), kind, t.name_id(name))
            device((*row, int(e.device_index()), int(e.device_resource_id()), corr if corr > 0 else -1, n))
            n += 1
        t.device.maybe_spill()


def casts_by_line(
    watched: Iterable[tuple[int, int, int, int, int]],
    casts: dict[tuple[int, int], tuple[str, str]],
    line_of: Callable[[int], tuple[str, int] | None],
    into: Counter[tuple[str, int, str, str]],
) -> None:
    """The casts of a folded window by the user line their node sits under (the dtype round-trip rule)."""
    for _label, node, thread, start, _end in watched:
        cast = casts.get((thread, start))
        if cast is None:
            continue
        where = line_of(node)
        if where is not None:
            into[(where[0], where[1], cast[0], cast[1])] += 1


def _callee(ev: Any, ex: Any, tag: str, mod: Any) -> Any:
    """What a call calls, as far as telling one run of a line from the next needs: a module's class, a Python
    function, a builtin's name (without the object it is bound to)."""
    if mod is not None:
        return mod.cls_name
    try:
        if tag == "PyCall":
            site = ex.callsite
            return (site.file_name, site.function_name)
        return str(ev.name).split(" of ", 1)[0].split(" at 0x", 1)[0]
    except (AttributeError, UnicodeDecodeError):
        return None


def _line_run(
    runs: dict[int, tuple[int, set[Any]]],
    ran_on: dict[tuple[int, str, str], tuple[int, set[Any]]],
    caller: int,
    where: tuple[int, str, str],
    caller_ran_on: bool,
    label: int,
    callee: Any,
) -> int:
    """0 when a call from line ``label`` starts a new run of the line, -1 when it belongs to the run under way.

    The profiler reports calls, not line runs: consecutive calls from one line of one calling frame are one run
    of it (``self.drop(self.encoder(x))``) until a callee repeats (``for block in blocks: x = block(x)`` calls
    the same class each time round) or another line of the frame runs between them. ``caller``: the calling
    frame in this window; a frame that ran on from the last window (``caller_ran_on``) goes on with the run it
    had there, found by ``where`` (thread, file, function) in ``ran_on``, which outlives the window, until its run
    in this window is known (``where`` is shared by the functions of one name in one file)."""
    run = runs.get(caller)
    if run is None and caller_ran_on:
        run = ran_on.get(where)
    if run is not None and run[0] == label and callee not in run[1]:
        run[1].add(callee)
        return -1
    run = (label, {callee})
    runs[caller] = ran_on[where] = run
    return 0


def _ran_to_end(rows: list[tuple[int, ...]], roots: Iterable[Any], host: Any) -> None:
    """A range ended as the window stopped ended inside the session's own call, before the frames inside it
    (the tracer ends them at the stop): the latest-ending row of each such range runs to the window's end.
    Then the rows go to the table."""
    window_end = max((r.start_time_ns + r.duration_time_ns for r in roots), default=0)
    latest: dict[tuple[int, int], int] = {}  # (thread, label) -> index of the latest-ending row
    for i, row in enumerate(rows):
        j = latest.get((row[0], row[4]))
        if j is None or row[1] + row[2] > rows[j][1] + rows[j][2]:
            latest[(row[0], row[4])] = i
    last = set(latest.values())
    for i, row in enumerate(rows):
        if i in last and window_end > row[1] + row[2]:
            row = (*row[:2], window_end - row[1], *row[3:])
        host(row)


def _user_scope_value() -> int:
    """RecordScope.USER_SCOPE's value (``record_function``'s ranges)."""
    try:
        import torch

        return int(torch._C._profiler.RecordScope.USER_SCOPE.value)
    except (ImportError, AttributeError):  # (a test double without torch)
        return -2


def _runs_torch(ev: Any) -> bool:
    """Does a Python call run a torch op or a module somewhere inside it (the first one found ends the search)."""
    stack = list(ev.children)
    while stack:
        c = stack.pop()
        name = c.tag.name
        if name == "TorchOp":
            return True
        if name == "PyCall" and c.extra_fields.module is not None:
            return True
        stack.extend(c.children)
    return False


def _shapes(inputs: Iterable[Any]) -> list[Any]:
    """Per input: a tensor's sizes, a tensor list's list of sizes, else None."""
    out: list[Any] = []
    for i in inputs:
        if isinstance(i, list):
            out.append([[int(s) for s in t.sizes] for t in i if getattr(t, "sizes", None) is not None] or None)
            continue
        sizes = getattr(i, "sizes", None)
        out.append([int(s) for s in sizes] if sizes is not None else None)
    return out


def _itemsizes(inputs: Iterable[Any]) -> list[int]:
    out: list[int] = []
    for i in inputs:
        t = i[0] if isinstance(i, list) and i else i
        dtype = getattr(t, "dtype", None)
        out.append(int(getattr(dtype, "itemsize", 0) or 0) if getattr(t, "sizes", None) is not None else 0)
    return out
