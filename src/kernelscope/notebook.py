"""Notebooks: ``%load_ext kernelscope``, the ``%%kernelscope`` cell magic, and how a profile shows itself.

``%%kernelscope [-o OUT.ksprof] [--max-overhead F] [--shapes ...] [--memory ...] [--steps N] [--duration S]
[--no-report]`` runs the cell under ``kernelscope.profile()`` (recording from the cell's first line) and shows the
tree and the interactive report inline; the profile is left in the notebook's ``_kernelscope`` variable. A
profile (``kernelscope.load()``, ``kernelscope.profile().result``) renders itself the same way
(``_repr_html_``). Offline: the tree is the terminal view as HTML, the report the self-contained one of
``kernelscope report`` in a sandboxed ``<iframe srcdoc>`` (scripts run, nothing is fetched).
"""

from __future__ import annotations

import argparse
import html
import io
import shlex
from typing import Any

from .errors import KernelscopeError, UsageError
from .model import Profile

REPORT_HEIGHT = 640


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%kernelscope", add_help=False, exit_on_error=False)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--max-overhead", type=float, default=None)
    p.add_argument("--shapes", choices=("sample", "all", "off"), default="sample")
    p.add_argument("--memory", choices=("sample", "all", "off"), default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--duration", type=float, default=None)
    p.add_argument("--skip-first", type=int, default=0)
    p.add_argument("--no-compile-provenance", action="store_true")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--depth", type=int, default=12)
    return p


def parse_line(line: str) -> argparse.Namespace:
    """The magic's options (the ``run`` options that make sense for a cell); UsageError on anything else."""
    try:
        args, extra = _parser().parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as exc:
        raise UsageError(f"%%kernelscope {line}: {exc}") from None
    if extra:
        raise UsageError(f"unknown option(s) for %%kernelscope: {' '.join(extra)}")
    return args


def tree_html(profile: Profile, depth: int = 12) -> str:
    """The terminal tree view (header included) as HTML."""
    from rich.console import Console

    from .cli.view import show

    console = Console(
        file=io.StringIO(),
        record=True,
        width=120,
        color_system="truecolor",
        force_terminal=True,
        force_jupyter=False,  # (inside a kernel rich would display it itself)
        highlight=False,
    )
    show(profile, argparse.Namespace(by="tree", depth=depth, json=False), console=console)
    return console.export_html(
        inline_styles=True,
        code_format='<pre class="kernelscope-tree" style="font-family:monospace;font-size:12px;line-height:1.3">'
        "{code}</pre>",
    )


def report_iframe(profile: Profile, height: int = REPORT_HEIGHT) -> str:
    """The interactive report, isolated from the notebook's page (its own document, scripts only)."""
    from .render.report import render_report

    doc = html.escape(render_report(profile), quote=True)
    return (
        f'<iframe class="kernelscope-report" sandbox="allow-scripts" srcdoc="{doc}" '
        f'style="width:100%;height:{height}px;border:1px solid #ccc"></iframe>'
    )


def profile_html(profile: Profile, *, report: bool = True, depth: int = 12) -> str:
    parts = [tree_html(profile, depth)]
    if report:
        parts.append(report_iframe(profile))
    return '<div class="kernelscope">' + "".join(parts) + "</div>"


def cell_magic(line: str, cell: str, shell: Any) -> None:
    """``%%kernelscope``: profile the cell, show the tree and the report, keep the profile as ``_kernelscope``."""
    import importlib

    ipd: Any = importlib.import_module("IPython.display")  # (untyped)
    try:
        args = parse_line(line)
    except KernelscopeError as exc:
        print(f"kernelscope: {exc}")
        return
    from .collect import api

    session_options: dict[str, Any] = {
        "shapes": args.shapes,
        "memory": args.memory,
        "max_overhead": args.max_overhead,
        "steps": args.steps,
        "duration": args.duration,
        "skip_first": args.skip_first,
        "compile_capture": not args.no_compile_provenance,
        "record_from": "start",
    }
    p = api.profile(args.output, **session_options)
    try:
        p.__enter__()
    except KernelscopeError as exc:  # another profile runs in this kernel
        print(f"kernelscope: {exc}")
        return
    session = api.current()
    if session is not None:  # the header's "program:" line: the cell, not the kernel's launcher
        session.argv = ["%%kernelscope", *shlex.split(line)]
    try:
        shell.run_cell(cell)  # the cell's own output and traceback, as a cell shows them
    finally:
        p.__exit__(None, None, None)
    profile = p.result
    if profile is None:  # (finalize always sets it; kept for the type checker)
        return
    shell.user_ns["_kernelscope"] = profile
    for warning in profile.metadata.get("warnings", []):
        print(f"kernelscope: warning: {warning}")
    ipd.display(ipd.HTML(profile_html(profile, report=not args.no_report, depth=args.depth)))
    if args.output:
        print(f"kernelscope: profile saved to {args.output}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext kernelscope``."""

    def kernelscope(line: str, cell: str) -> None:
        cell_magic(line, cell, ipython)

    kernelscope.__doc__ = cell_magic.__doc__
    ipython.register_magic_function(kernelscope, "cell", "kernelscope")


__all__ = ["cell_magic", "load_ipython_extension", "parse_line", "profile_html", "report_iframe", "tree_html"]
