"""Steps of a program with no optimizer object run from one call of its step module to the next
(collect/steps.py): each holds one iteration's forward, loss, backward and update, whichever other modules the
iteration calls."""

from __future__ import annotations

from typing import Any

import pytest

from kernelscope.collect.steps import StepDetector


def _steps(calls: list[str], optimizer_after: int | None = None) -> tuple[int, str | None, int]:
    """Feed outermost module calls (one letter a module); returns (steps, source, restarts)."""
    counted = [0, 0]

    def step() -> None:
        counted[0] += 1

    def restart() -> None:
        counted[0] = 0
        counted[1] += 1

    d = StepDetector(step, restart)
    ids = {name: i for i, name in enumerate(sorted(set(calls)))}
    for i, name in enumerate(calls):
        if optimizer_after is not None and i == optimizer_after:
            d._optimizer_pre()
            d._optimizer_post()
        d.outer_module_called(ids[name])
    return counted[0], d.source, counted[1]


def test_a_loss_module_is_part_of_the_step() -> None:
    # model, loss, model, loss, ...: three iterations are two boundaries (the last iteration is the run's tail)
    assert _steps(list("mlmlml")) == (2, "module", 0)


def test_an_inference_loop() -> None:
    assert _steps(list("mmmm")) == (3, "module", 0)


def test_set_up_modules_called_once_are_not_steps() -> None:
    assert _steps(list("abmlml")) == (1, "module", 0)
    assert _steps(list("ab")) == (0, None, 0)


def test_the_optimizer_wins() -> None:
    # gradient accumulation: the module repeats before the first optimizer step; then only optimizer steps count
    steps, source, restarts = _steps(list("mmmm"), optimizer_after=2)
    assert source == "optimizer" and restarts == 1 and steps == 1


torch = pytest.importorskip("torch")


def _manual_sgd(iterations: int) -> None:
    """pytorch/examples word_language_model's shape: a model and a loss module, backward, a hand-written update."""
    torch.manual_seed(0)
    model = torch.nn.LSTM(16, 32)
    criterion = torch.nn.MSELoss()
    for _ in range(iterations):
        out, _ = model(torch.randn(8, 4, 16))
        loss = criterion(out, torch.zeros_like(out))
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.01)


@pytest.mark.slow
def test_windows_at_module_steps_keep_each_backward_with_its_forward() -> None:
    """Windows open and close at every other step (a schedule): a step that began at the model's return held one
    iteration's backward without its forward, and the fold said "backward ops without a matching forward op"."""
    import kernelscope

    with kernelscope.profile(compile_capture=False, schedule="wait=1,active=1", fold="inline") as p:
        _manual_sgd(12)
    profile: Any = p.result
    md = profile.metadata
    assert md["coverage"]["step_source"] == "module"
    assert md["coverage"]["steps"] == 11  # twelve iterations: eleven boundaries, the last iteration in the tail
    assert not [w for w in md["warnings"] if "backward" in w], md["warnings"]
    whole = md["coverage"]["recorded_steps"]
    assert 4 <= whole <= 6
    calls: dict[str, float] = {}
    count = profile.exclusive("count")
    for n in range(1, len(profile)):
        f = profile.frame_of(n)
        if f.kind.value == "op" and f.name in ("aten::lstm", "aten::mse_loss"):
            calls[f.name] = calls.get(f.name, 0) + float(count[n])
    # every recorded iteration whole: its forward and its loss, once each (set-up is not recorded: wait=1)
    assert calls["aten::lstm"] == calls["aten::mse_loss"] >= whole


def test_the_forward_hook_goes_once_the_optimizer_wins() -> None:
    """Outermost module calls only find steps until the optimizer wins for good: then the forward hook that
    tracks them goes (inside a window torch's Python tracer records every call it makes)."""
    from torch.nn.modules import module as hooks

    import kernelscope

    before = len(hooks._global_forward_hooks)
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with kernelscope.profile(compile_capture=False, fold="inline") as p:
        during = []
        for _ in range(4):
            model(torch.randn(2, 8)).sum().backward()
            opt.step()
            during.append(len(hooks._global_forward_hooks) - before)
    assert during[0] == 1 and during[-1] == 0  # (the first step's module calls still looked for a step module)
    assert len(hooks._global_forward_hooks) == before
    profile: Any = p.result
    assert profile.metadata["coverage"]["step_source"] == "optimizer"
    assert profile.metadata["coverage"]["steps"] == 4
