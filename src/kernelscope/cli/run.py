"""``kernelscope run [-o OUT] [--no-view] SCRIPT ARGS... | -m MODULE ARGS...``"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from ..analysis.summary import coverage_note
from ..collect.checkpoint import Checkpoint
from ..collect.policy import GRACE_SECONDS_DEFAULT
from ..collect.runner import Outcome
from ..collect.signals import Terminated, end_as, held, terminating
from ..errors import BadInputError
from ..render.json_view import dump
from .history import add_run_arguments, record_run
from .run_job import add_arguments as add_job_arguments
from .run_job import output_for, rank_metadata, write_store
from .stdout import program_output_to_stderr
from .validate import non_negative_float, non_negative_int, positive_int


class RunCommand:
    name = "run"
    help = "run a Python program under the profiler, save the profile and show where the time went"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-o", "--output", help="profile to write (default: <script>.ksprof in the current folder)")
        parser.add_argument("--html", metavar="REPORT.html", help="also write the HTML report (kernelscope report)")
        parser.add_argument("--no-view", action="store_true", help="do not print the tree afterwards")
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the documented JSON (schema 1): where the profile went and the tree view; the program's "
            "own output goes to stderr",
        )
        parser.add_argument(
            "--memory",
            choices=("sample", "all", "off"),
            default=None,
            help="allocations (alloc_bytes): in the first window, extrapolated per context (default; all with "
            "--shapes all), in every window (slower), or none",
        )
        parser.add_argument("--no-memory", action="store_true", help="do not record allocations (= --memory off)")
        parser.add_argument(
            "--max-overhead",
            type=non_negative_float,
            default=None,
            metavar="FRACTION",
            help="spend at most FRACTION of the program's own time on recording (everything counts: recording, "
            "stopping, folding; never less than --grace), sampling whole steps when it would be more; 0 records every op "
            "(default: 0.1, or 0 with --steps, --duration or --schedule)",
        )
        parser.add_argument(
            "--grace",
            type=non_negative_float,
            default=GRACE_SECONDS_DEFAULT,
            metavar="SECONDS",
            help="kernelscope's cost always allowed, so that a short run is recorded whole (default: %(default)g)",
        )
        parser.add_argument(
            "--shapes",
            choices=("sample", "all", "off"),
            default="sample",
            help="input shapes for FLOPs/bytes: first second only, extrapolated per context (default), "
            "all calls (slower; for changing shapes), or none",
        )
        parser.add_argument(
            "--native",
            action="store_true",
            help="also sample the program's native stacks from outside (py-spy) and place them under the ops "
            "and lines that ran: where host time goes below Python (docs/native.md)",
        )
        parser.add_argument(
            "--native-rate",
            type=int,
            default=20,
            metavar="HZ",
            help="native samples a second (default: %(default)s)",
        )
        parser.add_argument(
            "--fold",
            choices=("background", "inline"),
            default="background",
            help="fold each recorded window in a forked child while the program runs on (default; Linux), or "
            "in the program's process",
        )
        parser.add_argument(
            "--no-compile-provenance", action="store_true", help="do not capture torch.compile provenance"
        )
        parser.add_argument(
            "--skip-first",
            type=non_negative_int,
            default=0,
            metavar="N",
            help="start recording after N kernelscope.step() calls",
        )
        parser.add_argument(
            "--steps", type=positive_int, default=None, metavar="N", help="stop recording after N recorded steps"
        )
        parser.add_argument(
            "--duration",
            type=non_negative_float,
            default=None,
            metavar="S",
            help="stop recording after S seconds of recording",
        )
        parser.add_argument(
            "--schedule",
            default=None,
            metavar="wait=N,warmup=N,active=N,repeat=N",
            help="record steps in cycles, like torch.profiler.schedule (counted in kernelscope.step() calls)",
        )
        parser.add_argument(
            "--from-start",
            action="store_true",
            help="record from the program's first line (imports and set-up included); default: from its "
            "first torch op or nn.Module call",
        )
        parser.add_argument(
            "--framework",
            choices=("torch", "jax"),
            default=None,
            help="which profiler to use (default: jax when the program imports jax and not torch, else torch)",
        )
        add_run_arguments(parser)
        add_job_arguments(parser)  # launchers: --store (cli/run_job.py)
        parser.add_argument("-m", dest="module", action="store_true", help="run a module, like python -m")
        parser.add_argument("target", metavar="SCRIPT|MODULE")
        parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
        parser.set_defaults(by="tree", metrics=None, depth=None, include=None, exclude=None, threshold=1.0, limit=40)

    def run(self, args: argparse.Namespace) -> int:
        from ..collect.runner import check_target

        check_target(args.target, args.module)
        output = output_for(args, args.output or _default_output(args.target, args.module))  # a launcher's rank
        out_dir = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(out_dir):
            raise BadInputError(f"{output}: folder {out_dir} does not exist")
        from ..collect.jax_live import uses_jax

        framework = args.framework or ("jax" if uses_jax(args.target, args.module) else "torch")
        # Save no matter how the program ended; a second Ctrl-C must not cut the save short.
        with program_output_to_stderr(args.json):
            if framework == "jax":
                profile, outcome = _run_jax(args)
                with _saving():
                    saved, problem = _save(profile, output)
            else:
                try:
                    profile, outcome, saved, problem = _run_torch(args, output)
                except (KeyboardInterrupt, Terminated) as exc:
                    return _ended_before_start(exc)
        for warning in profile.metadata.get("warnings", []):
            print(f"kernelscope: warning: {warning}", file=sys.stderr)
        coverage = coverage_note(profile.metadata)
        if coverage is not None:
            print(f"kernelscope: {coverage}", file=sys.stderr)
        if not args.no_view and problem is None and not args.json and not outcome.signal:
            from .view import show  # (imported when needed: the program's start-up does not wait for it)

            sys.stdout.flush()
            show(profile, _view_args(args))
            sys.stdout.flush()
        note = f" ({outcome.error})" if outcome.error else ""
        if args.html and problem is None:
            from ..render.report import write_report

            try:
                write_report(profile, args.html, _live_roots(args))
            except OSError as exc:
                problem = (
                    f"profile saved to {saved}, but the report {args.html} could not be written ({exc.strerror or exc})"
                )
        if args.json:
            _print_json(profile, args, saved, problem, outcome)
        if problem is not None:
            print(f"kernelscope: {problem}{note}", file=sys.stderr)
            return int(outcome.exit_code) or 2
        print(f"kernelscope: profile saved to {saved}{note}", file=sys.stderr)
        write_store(args, profile)  # --store: this rank's tables into the job store (cli/run_job.py)
        record_run(profile, saved, args)
        if outcome.signal:
            end_as(outcome.signal)  # the exit status the signal gives (143 for SIGTERM)
        return int(outcome.exit_code)


def _print_json(profile: Any, args: argparse.Namespace, saved: str, problem: str | None, outcome: Any) -> None:
    """``run --json``: schema 1 (docs/schemas/run.schema.json)."""
    doc: dict[str, Any] = {
        "schema": 1,
        "profile": saved,
        "exit_code": int(outcome.exit_code),
        "error": outcome.error or None,
        "problem": problem,
    }
    depth = 0
    if not args.no_view and problem is None:
        from .view import view_json

        doc["view"], depth = view_json(profile, _view_args(args))
    dump(doc, depth_hint=depth)
    sys.stdout.flush()


def _run_torch(args: argparse.Namespace, output: str) -> tuple[Any, Any, str, str | None]:
    from ..collect.runner import run_program

    try:
        from ..collect import api
    except ImportError as exc:
        raise BadInputError(f"kernelscope run needs PyTorch ({exc}); pip install 'kernelscope[torch]'") from None
    session = api.start(
        skip_first=args.skip_first,
        shapes=args.shapes,
        profile_memory=not args.no_memory,
        memory="off" if args.no_memory else args.memory,
        max_overhead=args.max_overhead,
        grace_seconds=args.grace,
        compile_capture=not args.no_compile_provenance,
        native=args.native,
        native_rate=args.native_rate,
        fold=args.fold,
        steps=args.steps,
        duration=args.duration,
        schedule=args.schedule,
        record_from="start" if args.from_start else "first-call",
    )
    session.argv = [args.target, *args.args]
    # issue 25: a killed run leaves what was folded (checkpoint), SIGTERM/SIGHUP save then end (signals)
    session.checkpoint = Checkpoint(output)
    try:
        with terminating():
            outcome = run_program(args.target, list(args.args), args.module)
    except Terminated as exc:  # between the program's end and here
        outcome = Outcome(128 + exc.signum, str(exc), signal=exc.signum)
    with _saving() as pending:
        profile = api.finalize()
        profile.metadata["exit_code"] = outcome.exit_code
        profile.metadata["checkpoints"] = session.checkpoint.summary()
        saved, problem = _save(profile, output)
    if pending and not outcome.signal:  # it came while saving: acted on now that the profile is safe
        outcome = Outcome(128 + pending[0], f"terminated by {signal.Signals(pending[0]).name}", signal=pending[0])
    return profile, outcome, saved, problem


def _run_jax(args: argparse.Namespace) -> tuple[Any, Any]:
    try:
        from ..collect.jax_live import profile_script
    except ImportError as exc:
        raise BadInputError(f"profiling a JAX program needs JAX ({exc}); pip install 'kernelscope[jax]'") from None
    return profile_script(args.target, list(args.args), args.module)


@contextlib.contextmanager
def _saving() -> Iterator[list[int]]:
    """Ctrl-C is held while folding and saving, SIGTERM/SIGHUP put off (the list: those that came);
    a progress line when that takes over a second."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    progress = threading.Timer(1.0, _say_saving)
    progress.name = "kernelscope-progress"
    progress.daemon = True
    with contextlib.suppress(RuntimeError):  # "can't start new thread": at its memory limit, saved without the line
        progress.start()
    try:
        with held() as pending:
            yield pending
    finally:
        progress.cancel()
        signal.signal(signal.SIGINT, previous)


def _ended_before_start(exc: BaseException) -> int:
    """Ctrl-C or SIGTERM/SIGHUP before the program ran: nothing was recorded, and the user is told so."""
    if isinstance(exc, Terminated):
        print(f"kernelscope: {exc} before the program started; no profile was saved", file=sys.stderr)
        end_as(exc.signum)
        return 128 + exc.signum
    print("kernelscope: interrupted before the program started; no profile was saved", file=sys.stderr)
    return 130


def _say_saving() -> None:
    print("kernelscope: folding and saving the profile...", file=sys.stderr, flush=True)


def _save(profile: Any, output: str) -> tuple[str, str | None]:
    """Save to ``output``; when that fails, to a temporary file that the message names."""
    profile.metadata.update(rank_metadata())  # under a launcher: rank, world size, job (cli/run_job.py)
    try:
        profile.save(output)
        return output, None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
    fd, fallback = tempfile.mkstemp(prefix="kernelscope-", suffix=".ksprof")
    os.close(fd)
    try:
        profile.save(fallback)
    except OSError as exc:
        return output, f"could not write {output} ({why}) nor {fallback} ({exc.strerror}): the profile is lost"
    return fallback, f"could not write {output} ({why}); the profile was saved to {fallback} instead"


def _view_args(args: argparse.Namespace) -> Any:
    ns = argparse.Namespace(**vars(args))
    ns.depth = ns.depth or 12
    return ns


def _live_roots(args: argparse.Namespace) -> Any:
    """A live run's source roots: its working folder and its script's folder (docs/trust.md)."""
    from ..trust.sources import SourceRoots

    return SourceRoots.of([os.getcwd()] + ([] if args.module else [os.path.dirname(os.path.abspath(args.target))]))


def _default_output(target: str, is_module: bool) -> str:
    stem = target.rsplit(".", 1)[-1] if is_module else os.path.splitext(os.path.basename(target.rstrip("/")))[0]
    return f"{stem or 'profile'}.ksprof"


COMMAND = RunCommand()
