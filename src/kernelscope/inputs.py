"""Open whatever the user points at: a .ksprof profile, a job store (its merged profile) or any importable trace."""

from __future__ import annotations

import os

from .errors import BadInputError
from .model import Profile, load
from .model.io import MAGIC, is_ksprof, is_store
from .trust.limits import refuse_special


def _looks_like_ksprof(path: str) -> bool:
    if path.endswith(".ksprof"):
        return True
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def open_profile(path: str) -> Profile:
    if not os.path.exists(path):
        raise BadInputError(f"{path}: no such file")
    refuse_special(path)
    if is_store(path):
        from .store.read import open_store

        return open_store(path).merged()
    if os.path.isdir(path):
        raise BadInputError(
            f"{path}: a folder that is not a kernelscope store (kernelscope import TRACES --store {path})"
        )
    if is_ksprof(path) or _looks_like_ksprof(path):
        return load(path)  # a damaged one says "corrupt kernelscope profile", not "not a format"
    from .importers import import_file

    return import_file(path)
