"""Trainer integrations: profile through the trainer the program already uses.

- :mod:`.transformers`: ``KernelscopeCallback``, a Hugging Face ``TrainerCallback``;
- :mod:`.lightning`: ``KernelscopeProfiler``, for ``lightning.Trainer(profiler=...)``.

Both take their step boundaries from the trainer (one ``kernelscope.step()`` per optimizer step), write one
profile per run (per rank under a launcher, named as ``kernelscope run`` names them) and state coverage on stderr
as ``run`` does. They import their trainer's package only when used.
"""
