"""Run a user's program the way ``python`` would, inside a profiling session.

argv, ``__main__``, ``sys.path[0]`` and the program's stdout/stderr are as under
``python SCRIPT`` / ``python -m MODULE``. The outcome (exit code, exception,
interrupt) is returned, never raised, so the caller can always save the profile.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import traceback
from dataclasses import dataclass

from ..errors import BadInputError
from .signals import Terminated


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    error: str | None = None  # one line: what happened, when the program did not end normally
    interrupted: bool = False
    signal: int = 0  # SIGTERM/SIGHUP that ended it (collect/signals.py): the caller saves, then ends as it


def check_target(target: str, is_module: bool) -> None:
    if is_module:
        import importlib.util

        try:
            found = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise BadInputError(f"no module named {target!r}")
        return
    if not os.path.exists(target):
        raise BadInputError(f"{target}: no such file")
    if os.path.isdir(target) and not os.path.exists(os.path.join(target, "__main__.py")):
        raise BadInputError(f"{target}: is a directory without __main__.py")


def run_program(target: str, args: list[str], is_module: bool) -> Outcome:
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    if is_module:
        sys.argv = [target, *args]
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = [target, *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return Outcome(0)
        if isinstance(code, int):
            return Outcome(code, None if code == 0 else f"the program exited with code {code}")
        print(code, file=sys.stderr)  # sys.exit("message") prints it, exit code 1
        return Outcome(1, "the program exited with an error message")
    except KeyboardInterrupt:
        # from here on a second Ctrl-C must not cut the save of what was collected short
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return Outcome(130, "interrupted (Ctrl-C)", interrupted=True)
    except Terminated as exc:  # SIGTERM/SIGHUP: save first, then end as the signal would (collect/signals.py)
        return Outcome(128 + exc.signum, str(exc), signal=exc.signum)
    except BaseException as exc:  # the program's own failure: show it as python would
        _print_user_traceback(exc)
        return Outcome(1, f"the program raised {type(exc).__name__}: {_first_line(exc)}")
    finally:
        sys.argv = saved_argv
        if sys.path and saved_path0 is not None and sys.path[0] != saved_path0:
            del sys.path[0]
    return Outcome(0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _print_user_traceback(exc: BaseException) -> None:
    """The program's traceback without kernelscope's and runpy's frames."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tb = exc.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename.startswith(here) or tb.tb_frame.f_code.co_filename.endswith("runpy.py")
    ):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
