"""attribute.structure: wrapper modules, region wrappers and pass-through frames folded; compiled regions named
after what the user compiled; identical rows of the tree view tell themselves apart. Literal trees in, whole
trees out."""

from __future__ import annotations

import io
from typing import Any

from conftest import build
from kernelscope.analysis.metrics import parse_metrics
from kernelscope.analysis.tree import TreeOptions, tree_view
from kernelscope.attribute.structure import user_structure
from kernelscope.model import Frame, Profile
from kernelscope.render.console import make_console
from kernelscope.render.json_view import tree_json
from kernelscope.render.tree_text import render_tree

M = Frame.module_
PY = Frame.python
OP = Frame.op
# a file of an installed library (transformers is installed in the dev environment; only its path matters)
DEPRECATION = "transformers/utils/deprecation.py"
MODELING = "transformers/models/gpt2/modeling_gpt2.py"


def shape(p: Profile, node: int = 0) -> tuple[Any, ...]:
    f = p.frame_of(node)
    own = {k: float(v[node]) for k, v in p.metrics.items() if v[node]}
    return (f.label(), own, [shape(p, c) for c in p.children[node]])


def test_compiled_module_wrapper_folds_and_region_is_named_after_the_torch_compile() -> None:
    line = PY("train.py", 22, "main")
    wrapper, inner = M("OptimizedModule", "OptimizedModule"), M("_orig_mod", "MLP")
    region = Frame.region("Torch-Compiled Region", "1/0")
    meta = {
        "compile": {
            "callables": [
                {"name": "MLP.forward", "def_file": "train.py", "def_line": 10, "file": "train.py", "line": 17}
            ],
            "compiles": [{"compile_id": "1/0", "file": "train.py", "line": 10}],
        }
    }
    p = build(
        [
            ([line, wrapper], {"time_ns": 5.0, "count": 3.0}),  # the wrapper's own work (guards)
            ([line, wrapper, inner], {"count": 3.0}),
            ([line, wrapper, inner, region], {"count": 2.0}),
            ([line, wrapper, inner, region, Frame.region("CompiledFunction"), M("_orig_mod.layers.0", "Linear"), OP("aten::addmm")], {"time_ns": 7.0, "count": 3.0}),
        ],
        meta,
    )  # fmt: skip
    assert shape(user_structure(p)) == (
        "<root>", {}, [
            ("train.py:22 main", {"time_ns": 5.0}, [  # the wrapper's time goes to the line that called it
                ("MLP (MLP)", {"count": 3.0}, [
                    ("<torch.compile(MLP.forward)>", {"count": 2.0}, [
                        # (the region's calls: the graph runs the module once per call)
                        ("layers.0 (Linear)", {"count": 2.0}, [("aten::addmm", {"time_ns": 7.0, "count": 3.0}, [])]),
                    ]),
                ]),
            ]),
        ],
    )  # fmt: skip
    # the torch.compile line is the region's location, not part of its name: the view shows it after the name,
    # --json gives it as the region's file and line
    out = user_structure(p)
    (named,) = [f for f in out.frames if f.kind.value == "region"]
    assert (named.file, named.line, named.location()) == ("train.py", 17, "train.py:17")
    text = io.StringIO()
    render_tree(make_console(text, width=100), tree_view(out), parse_metrics(None, set(out.metrics), ["count"]))
    assert "<torch.compile(MLP.forward)> @ train.py:17" in text.getvalue()
    doc = tree_json(tree_view(out), ["count"])
    (region,) = [d for d in _walk(doc["root"]) if d["kind"] == "region"]
    assert (region["name"], region["class"], region["file"], region["line"]) == (
        "MLP.forward",
        "torch.compile",
        "train.py",
        17,
    )


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(d for c in node["children"] for d in _walk(c))]


def test_ddp_wrapper_and_its_scope_fold_and_paths_lose_module() -> None:
    line = PY("job.py", 31, "main")
    ddp = M("DistributedDataParallel", "DistributedDataParallel")
    scope = Frame.scope("DistributedDataParallel.forward")
    p = build(
        [
            ([line, ddp, scope, OP("c10d::broadcast_")], {"time_ns": 1.0, "count": 1.0}),
            ([line, ddp, scope, M("module", "ToyModel"), M("module.net1", "Linear"), OP("aten::addmm")], {"time_ns": 2.0}),
        ]
    )  # fmt: skip
    out = user_structure(p)
    assert shape(out) == (
        "<root>", {}, [
            ("job.py:31 main", {}, [
                ("c10d::broadcast_", {"time_ns": 1.0, "count": 1.0}, []),
                ("ToyModel (ToyModel)", {}, [("net1 (Linear)", {}, [("aten::addmm", {"time_ns": 2.0}, [])])]),
            ]),
        ],
    )  # fmt: skip


def test_pass_through_library_frames_fold_into_the_call_they_wrap() -> None:
    block = M("h.0", "GPT2Block")
    wrapper = PY(DEPRECATION, 173, "wrapped_func")
    p = build(
        [
            ([block, wrapper], {"count": 2.0}),
            ([block, wrapper, PY(MODELING, 277, "forward"), M("h.0.attn", "GPT2Attention"), OP("aten::mm")], {"time_ns": 3.0}),
            ([block, wrapper, PY(MODELING, 308, "forward"), M("h.0.mlp", "GPT2MLP"), OP("aten::mm")], {"time_ns": 4.0}),
        ]
    )  # fmt: skip
    labels = [f.label() for f in user_structure(p).frames]
    assert f"{DEPRECATION}:173 wrapped_func" not in labels
    assert shape(user_structure(p))[2][0][0] == "h.0 (GPT2Block)"
    assert [c[0] for c in shape(user_structure(p))[2][0][2]] == [f"{MODELING}:277 forward", f"{MODELING}:308 forward"]


def test_a_real_call_is_not_a_pass_through() -> None:
    # a library line that calls a helper among other lines of its function: the call site stays
    model = M("transformer", "GPT2Model")
    p = build(
        [
            ([model, PY(MODELING, 600, "forward"), PY("transformers/modeling_utils.py", 10, "mask")], {"time_ns": 1.0}),
            ([model, PY(MODELING, 608, "forward"), M("h.0", "GPT2Block"), OP("aten::mm")], {"time_ns": 2.0}),
            # the program's own files never fold, whatever their shape
            ([PY("train.py", 5, "main"), PY("train.py", 9, "step"), OP("aten::add")], {"time_ns": 1.0}),
        ]
    )  # fmt: skip
    assert user_structure(p).frames == p.frames


def test_identical_rows_show_what_tells_them_apart() -> None:
    evaluate = PY("main.py", 57, "evaluate")
    p = build(
        [
            ([PY("main.py", 95, "<module>"), evaluate, OP("aten::mm")], {"time_ns": 12.0}),
            ([PY("main.py", 99, "<module>"), evaluate, OP("aten::mm")], {"time_ns": 11.0}),
        ]
    )
    tv = tree_view(p, TreeOptions(collapse=True))
    top = [p.frame_of(n).label() for n, d in zip(tv.order, tv.depth, strict=True) if d == 1]
    assert top == ["main.py:95 <module>", "main.py:99 <module>"]


def test_imported_region_is_named_after_the_module_and_function_inside_it() -> None:
    # a trace has no record of the torch.compile call: the name only, no line that would read as one
    region = Frame.region("Torch-Compiled Region", "0/0")
    p = build([([M("MLP_0", "MLP"), region, PY("model.py", 12, "forward"), OP("aten::addmm")], {"time_ns": 1.0})])
    out = user_structure(p)
    assert [f.label() for f in out.frames if f.kind.value == "region"] == ["<torch.compile(MLP.forward)>"]


def test_nested_wrappers_ddp_of_a_compiled_model_and_fsdp_per_block() -> None:
    line = PY("train.py", 3, "main")
    ddp = M("DistributedDataParallel", "DistributedDataParallel")
    opt = M("module", "OptimizedModule")
    p = build(
        [
            (
                [line, ddp, opt, M("module._orig_mod", "Net"), M("module._orig_mod.fc", "Linear"), OP("aten::mm")],
                {"time_ns": 1.0},
            )
        ]
    )
    assert [f.label() for f in user_structure(p).frames[1:]] == [
        "train.py:3 main",
        "Net (Net)",
        "fc (Linear)",
        "aten::mm",
    ]
    fsdp = M("FullyShardedDataParallel", "FullyShardedDataParallel")
    inner = M("_fsdp_wrapped_module", "GPT")
    block = M("_fsdp_wrapped_module.h.0", "FullyShardedDataParallel")
    p = build(
        [
            ([line, fsdp, inner, block, M("_fsdp_wrapped_module.h.0._fsdp_wrapped_module", "Block"),
              M("_fsdp_wrapped_module.h.0._fsdp_wrapped_module.attn", "Attention"), OP("aten::mm")], {"time_ns": 1.0}),
        ]
    )  # fmt: skip
    labels = [f.label() for f in user_structure(p).frames[1:]]
    assert labels == ["train.py:3 main", "GPT (GPT)", "h.0 (Block)", "h.0.attn (Attention)", "aten::mm"]


def test_a_library_frame_doing_the_work_is_not_a_pass_through() -> None:
    # transformers' image_transforms.py normalize (owlv2 trace): most of its host time its own, around one small
    # helper; its parent, whose host time is all in it, still folds
    outer = PY("transformers/image_processing_utils.py", 79, "normalize")
    inner = PY("transformers/image_transforms.py", 390, "normalize")
    helper = PY("transformers/image_utils.py", 390, "get_channel_dimension_axis")
    caller = PY("transformers/models/owlv2/image_processing_owlv2.py", 368, "preprocess")
    p = build(
        [
            ([caller], {"cpu_time_ns": 5.0, "count": 1.0}),
            ([caller, outer], {"cpu_time_ns": 1.0, "count": 1.0}),
            ([caller, outer, inner], {"cpu_time_ns": 46_000.0, "count": 1.0}),
            ([caller, outer, inner, helper], {"cpu_time_ns": 7.0, "count": 1.0}),
            ([caller, PY("transformers/image_transforms.py", 93, "rescale")], {"cpu_time_ns": 100.0, "count": 1.0}),
        ]
    )  # fmt: skip
    labels = [f.label() for f in user_structure(p).frames]
    assert inner.label() in labels and helper.label() in labels
    assert outer.label() not in labels


def test_on_a_cpu_run_host_time_folded_into_an_op_is_op_time() -> None:
    # a live CPU run: every op's time is its host self time; the graph call folded into CompiledFunctionBackward
    # keeps it so (an export re-imported reads an op's self time as its time)
    bw = OP("CompiledFunctionBackward")
    graph = Frame.region("CompiledFxGraph", "fabc")
    kernel = Frame.kernel("cpp_fused_sum_0", "cpu", -1)
    paths = [
        ([PY("train.py", 9, "main"), bw], {"time_ns": 2.0, "cpu_time_ns": 2.0, "count": 1.0}),
        ([PY("train.py", 9, "main"), bw, graph], {"cpu_time_ns": 5.0, "count": 1.0}),
        ([PY("train.py", 9, "main"), bw, graph, kernel], {"time_ns": 7.0, "cpu_time_ns": 7.0, "count": 1.0}),
    ]
    for device_run, op_time in ((False, 7.0), (True, 2.0)):
        p = user_structure(build(paths, {"device_run": device_run}))
        node = next(i for i in range(len(p)) if p.frame_of(i) == bw)
        assert p.exclusive("cpu_time_ns")[node] == 7.0 and p.exclusive("time_ns")[node] == op_time
