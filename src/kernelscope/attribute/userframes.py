"""Which Python frames are the user's: not the stdlib, the frameworks and their tooling, or kernelscope.
Installed model libraries (transformers, diffusers, timm, vllm, ...) are user code: that is where the
model is written.

DESIGN.md: the *user line* is the innermost Python frame outside those. ``KERNELSCOPE_LIBRARY_PATHS``
(os.pathsep separated prefixes) adds more library locations; ``KERNELSCOPE_USER_PATHS`` forces
prefixes to count as user code (e.g. to profile a library you develop in site-packages).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from functools import lru_cache

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _prefixes() -> tuple[str, ...]:
    """The library locations, longest first: the interpreter's, ``sys.path``'s package folders and
    ``KERNELSCOPE_LIBRARY_PATHS``' (read again when either changes)."""
    return _prefixes_of(tuple(sys.path), os.environ.get("KERNELSCOPE_LIBRARY_PATHS", ""))


@lru_cache(maxsize=16)
def _prefixes_of(path: tuple[str, ...], library_paths: str) -> tuple[str, ...]:
    # (cached: computed per file met, ``sysconfig.get_paths`` made the first window of a live run's fold, 7,700
    # events, 0.05 s dearer for its 44 files)
    paths: set[str] = set()
    scheme = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = scheme.get(key)
        if p:
            paths.add(os.path.realpath(p))
    for p in path:
        if p and ("site-packages" in p or "dist-packages" in p):
            paths.add(os.path.realpath(p))
    paths.add(os.path.realpath(_PKG_DIR))
    # the interpreter's own tree (bin/ holds console scripts such as `kernelscope` itself)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        paths.add(os.path.realpath(prefix))
    for extra in library_paths.split(os.pathsep):
        if extra:
            paths.add(os.path.realpath(extra))
    return tuple(sorted(paths, key=len, reverse=True))


def _forced() -> tuple[str, ...]:
    return tuple(os.path.realpath(p) for p in os.environ.get("KERNELSCOPE_USER_PATHS", "").split(os.pathsep) if p)


@lru_cache(maxsize=8192)
def resolve(filename: str) -> str:
    """Absolute path of a file name as profilers record it.

    PyTorch's Python tracer strips the ``sys.path`` entry a file was found under
    (``torch/nn/modules/linear.py``, ``train.py``); look it up there again.
    """
    if not filename or filename.startswith("<") or os.path.isabs(filename):
        return filename
    for entry in sys.path:
        candidate = os.path.join(entry or os.getcwd(), filename)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return os.path.abspath(filename)


# Installed packages that are the frameworks themselves, their dependencies or tooling: library code.
# Anything else installed (transformers, diffusers, timm, vllm, ...) is where models are written.
FRAMEWORK_PACKAGES = frozenset(
    {
        "torch",
        "torchgen",
        "functorch",
        "triton",
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "equinox",
        "haiku",
        "jaxtyping",
        "jmp",
        "chex",
        "wadler_lindig",
        "kernelscope",
        "numpy",
        "sympy",
        "mpmath",
        "networkx",
        "filelock",
        "fsspec",
        "jinja2",
        "markupsafe",
        "tqdm",
        "typing_extensions",
        "_pytest",
        "pytest",
        "pluggy",
        "importlib_metadata",
        "six",
        "setuptools",
        "pkg_resources",
        "_distutils_hack",
        "packaging",
        "huggingface_hub",
        "safetensors",
        "tokenizers",
        "regex",
        "yaml",
        "requests",
        "urllib3",
        "msgspec",
        "rich",
        # a notebook's kernel: the machinery that runs a cell, not the cell
        "IPython",
        "ipykernel",
        "ipykernel_launcher",
        "jupyter_client",
        "jupyter_core",
        "traitlets",
        "tornado",
        "zmq",
        "comm",
        "debugpy",
        "nest_asyncio",
        "site-packages",
        "dist-packages",
    }
)
STDLIB = frozenset(sys.stdlib_module_names)
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _installed_package(path: str) -> str | None:
    """The top-level package of a file under site-packages/dist-packages, else None."""
    for marker in _INSTALLED:
        at = path.rfind(marker)
        if at >= 0:
            top = path[at + len(marker) :].split(os.sep, 1)[0]
            return top[:-3] if top.endswith(".py") else top
    return None


@lru_cache(maxsize=8192)
def is_program_file(filename: str) -> bool:
    """The program's own files: user code that is not an installed package (where recording starts)."""
    return is_user_file(filename) and _installed_package(os.path.realpath(resolve(filename))) is None


# A notebook cell's code: ipykernel names it /tmp/ipykernel_<pid>/<hash>.py (no such file is written),
# terminal IPython <ipython-input-<n>-<hash>>
_NOTEBOOK_CELL = re.compile(r"(?:.*[/\\]ipykernel_\d+[/\\]\d+\.py|<ipython-input-\d+-[0-9a-f]+>)")


def is_notebook_cell(filename: str) -> bool:
    return _NOTEBOOK_CELL.fullmatch(filename) is not None


@lru_cache(maxsize=8192)
def is_user_file(filename: str) -> bool:
    """True for a real source file that is the user's code (``filename`` as recorded or absolute), or a notebook
    cell's code."""
    if is_notebook_cell(filename):
        return True
    if not filename or filename.startswith("<"):
        return False  # <string>, <frozen ...>, <built-in>, generated code
    real = os.path.realpath(resolve(filename))
    if not os.path.isfile(real):
        return False  # code generated at run time (AOTAutograd's codegen(...), exec'd strings)
    for p in _forced():
        if real.startswith(p + os.sep) or real == p:
            return True
    installed = _installed_package(real)
    if installed is not None:
        # model libraries (transformers, diffusers, timm, vllm, ...) are where the model is written
        return installed not in FRAMEWORK_PACKAGES and installed not in STDLIB
    for p in _prefixes():
        if real.startswith(p + os.sep):
            return False
    # Inductor's generated wrappers/kernels live in a cache folder, not the user's tree.
    return not ("torchinductor" in real or "/tmp/torchinductor" in real)


@lru_cache(maxsize=8192)
def display_path(filename: str) -> str:
    """Path relative to the working directory when inside it (DESIGN.md line keys)."""
    filename = resolve(filename)
    for marker in _INSTALLED:  # an installed library: its path inside site-packages, as Kineto writes it
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + len(marker) :]
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
