"""Shared by the matrix programs: ``kernelscope.step()`` each step when KS_STEP=1 (the program's own
steps), nothing otherwise (steps found without the program's help)."""

import os

if os.environ.get("KS_STEP") == "1":
    import kernelscope

    step = kernelscope.step
else:

    def step() -> None:
        pass
