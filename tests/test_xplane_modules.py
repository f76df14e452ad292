"""Which JAX name-stack scopes are modules (importers/xplane/modules.py), on the names the libraries write."""

from __future__ import annotations

from kernelscope.importers.xplane.modules import ModuleNames, parameter_owners, snake_case
from kernelscope.importers.xplane.place import scope_frames
from kernelscope.model import Frame


def test_snake_case_is_haikus_module_naming() -> None:
    assert [snake_case(c) for c in ("Linear", "MyMLP", "Conv2D", "BatchNorm", "MLP")] == [
        "linear",
        "my_mlp",
        "conv2_d",
        "batch_norm",
        "mlp",
    ]


def test_parameter_owners_are_the_dicts_that_hold_leaves() -> None:
    names = [
        "params['linear_1']['w']",
        "params['mlp/~/linear_0']['b']",
        "opt_state[0].mu['conv']['w']",
        "params['params']['Conv_0']['kernel']",
        "batch['image']",  # a leaf of a flat dict: no owner
        "dynamic_nodonate['first'][0]",  # a list item: not a parameter
        "x",
    ]
    assert parameter_owners(names) == {"linear_1", "mlp", "linear_0", "conv", "Conv_0"}


def test_module_classes_per_library() -> None:
    known = ModuleNames(classes=frozenset({"CNN", "MyMLP"}), owners=frozenset({"linear_1", "head"}))
    assert known.module_class("Conv_0") == "Conv"  # Flax linen auto name
    assert known.module_class("CNN") == "CNN"  # a class with a method on the stack
    assert known.module_class("eqx.nn.Linear") == "Linear"  # Equinox layer scope
    assert known.module_class("my_mlp_2") == "MyMLP"  # Haiku name of a user class (a repeat)
    assert known.module_class("linear_1") == ""  # Haiku module owning parameters; class unknown
    assert known.module_class("head") == ""
    assert known.module_class("xent") is None  # a jax.named_scope
    assert known.module_class("sequential") is None


def test_scope_frames_build_module_paths_through_modules_only() -> None:
    known = ModuleNames(classes=frozenset({"MyMLP"}), owners=frozenset({"linear_0"}))
    frames = scope_frames(("my_mlp", "block", "linear_0", "jit(relu)", "bij,jk->bik"), known)
    assert frames == [Frame.module_("my_mlp", "MyMLP"), Frame.scope("block"), Frame.module_("my_mlp/linear_0", "")]


def test_only_methods_name_classes() -> None:
    from kernelscope.importers.xplane.place import method_class

    assert [method_class(q) for q in ("CNN.__call__", "main.<locals>.update", "train", "A.B.c")] == ["CNN", "", "", "A"]
    # a named scope that happens to be the name of an enclosing function stays a scope
    lines = [Frame.python("p.py", 3, "main"), Frame.python("p.py", 9, "main.<locals>.loss")]
    from kernelscope.importers.xplane.place import with_scopes

    assert with_scopes(lines, ("main",)) == [*lines, Frame.scope("main")]
