"""Open whatever the user points at: a .ksprof profile or any importable trace."""

from __future__ import annotations

import os

from .errors import BadInputError
from .model import Profile, load
from .model.io import is_ksprof


def open_profile(path: str) -> Profile:
    if not os.path.exists(path):
        raise BadInputError(f"{path}: no such file")
    if is_ksprof(path):
        return load(path)
    from .importers import import_file

    return import_file(path)
