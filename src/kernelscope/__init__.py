"""kernelscope: where your model's time goes, from kernels back to your source lines."""

from __future__ import annotations

from typing import Any

from .analysis.ranks import RanksReport, use_job_analysis
from .model import Profile, load
from .model.profile import use_html, use_viewer
from .version import __version__

# The front door wires upper layers into lower ones, so that no module imports a layer above its own
# (DESIGN.md, "Layers"; the contracts are in pyproject.toml). It runs before any kernelscope.* module.


def _view(profile: Profile, by: str = "tree", **options: object) -> Any:
    from .analysis.views import view  # (late: `import kernelscope` stays light for live runs)

    return view(profile, by=by, **options)


use_viewer(_view)  # Profile.view reads with analysis.views


def _html(profile: Profile) -> str:
    from .notebook import profile_html  # (the notebook layer loads only when a notebook shows a profile)

    return profile_html(profile)


use_html(_html)  # Profile._repr_html_ renders with kernelscope.notebook


def _job_analysis(merged: Profile) -> RanksReport | None:
    try:
        from .store.ranks import analyze_profile
    except ImportError:  # the store extra (pyarrow, duckdb) is not installed
        return None
    return analyze_profile(merged)


use_job_analysis(_job_analysis)  # the advisor's rank rules read store.ranks' SQL

__all__ = [
    "Profile",
    "__version__",
    "activate",
    "deactivate",
    "finalize",
    "load",
    "profile",
    "scope",
    "start",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext kernelscope``: the ``%%kernelscope`` cell magic (notebook.py)."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    # The live API needs torch; import it only when asked for.
    if name in {"profile", "start", "finalize", "activate", "deactivate", "scope", "step"}:
        from .collect import api

        return getattr(api, name)
    raise AttributeError(name)
