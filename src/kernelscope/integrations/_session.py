"""What both trainer integrations do: one live session per training run, steps from the trainer, one profile
per run (per rank), coverage said on stderr as ``kernelscope run`` says it."""

from __future__ import annotations

import sys
from typing import Any

from ..analysis.summary import coverage_note
from ..collect.launcher import Launch, detect, distributed_info, rank_output
from ..model import Profile


class TrainerSession:
    """``begin()`` when training starts, ``step()`` after each optimizer step, ``end()`` when it ends."""

    def __init__(self, path: str, options: dict[str, Any], trainer: str) -> None:
        self.path = path
        self.options = {"record_from": "start", **options}
        self.trainer = trainer
        self.profile: Profile | None = None
        self.saved: str | None = None
        self._running = False

    def begin(self, local_rank: int | None = None) -> None:
        from ..collect import api

        if self._running or api.current() is not None:  # another profile runs (kernelscope run): it records this
            return
        session = api.start(**self.options)
        session.argv = list(sys.argv)
        self._running = True
        launch = detect()
        if launch is None and local_rank:  # a trainer that spawned its own workers on one machine
            launch = Launch(self.trainer, local_rank, None, local_rank, None)
        self._launch = launch

    def step(self) -> None:
        if self._running:
            from ..collect import api

            api.step()

    def end(self) -> Profile | None:
        """Finalize and save the run's profile; prints its warnings, coverage and where it went."""
        if not self._running:
            return None
        from ..collect import api

        self._running = False
        profile = api.finalize()
        out = self.path if self._launch is None else rank_output(self.path, self._launch)
        profile.metadata["trainer"] = self.trainer
        if self._launch is not None:
            profile.metadata.update(self._launch.metadata())
        dist = distributed_info()
        if dist:
            profile.metadata.setdefault("rank", dist["rank"])
            profile.metadata.setdefault("world_size", dist["world_size"])
            profile.metadata["distributedInfo"] = dist
        for warning in profile.metadata.get("warnings", []):
            print(f"kernelscope: warning: {warning}", file=sys.stderr)
        note = coverage_note(profile.metadata)
        if note is not None:
            print(f"kernelscope: {note}", file=sys.stderr)
        try:
            profile.save(out)
        except OSError as exc:
            print(
                f"kernelscope: could not write {out} ({exc.strerror or exc}); the profile was not saved",
                file=sys.stderr,
            )
        else:
            self.saved = out
            print(f"kernelscope: profile saved to {out}", file=sys.stderr)
        self.profile = profile
        return profile


class SessionResults:
    """What a trainer integration offers once training ended: ``result`` (the profile) and ``saved`` (its path)."""

    _session: TrainerSession

    @property
    def result(self) -> Profile | None:
        """The run's profile, once training ended."""
        return self._session.profile

    @property
    def saved(self) -> str | None:
        return self._session.saved
