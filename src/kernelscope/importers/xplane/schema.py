"""The subset of the XPlane and XLA HLO protobuf schemas that the importer reads.

Built at import time from descriptors (no generated code, no ``protoc``): field numbers follow
``tsl/profiler/protobuf/xplane.proto`` and ``xla/service/hlo.proto`` / ``xla/xla_data.proto``.
Fields left out here are kept as unknown fields by the decoder and never looked at.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_T = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
_SCALARS = {
    "int64": _T.TYPE_INT64,
    "uint64": _T.TYPE_UINT64,
    "int32": _T.TYPE_INT32,
    "double": _T.TYPE_DOUBLE,
    "string": _T.TYPE_STRING,
    "bytes": _T.TYPE_BYTES,
    "bool": _T.TYPE_BOOL,
}

# message -> [(field, number, type, repeated?)]; a type that is not a scalar names a message.
_XPLANE: dict[str, list[tuple[str, int, str, bool]]] = {
    "XSpace": [("planes", 1, "XPlane", True), ("hostnames", 4, "string", True)],
    "XPlane": [
        ("id", 1, "int64", False),
        ("name", 2, "string", False),
        ("lines", 3, "XLine", True),
        ("event_metadata", 4, "XPlane.EventMetadataEntry", True),
        ("stat_metadata", 5, "XPlane.StatMetadataEntry", True),
        ("stats", 6, "XStat", True),
    ],
    "XPlane.EventMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XEventMetadata", False)],
    "XPlane.StatMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XStatMetadata", False)],
    "XLine": [
        ("id", 1, "int64", False),
        ("name", 2, "string", False),
        ("timestamp_ns", 3, "int64", False),
        ("events", 4, "XEvent", True),
        ("display_name", 11, "string", False),
    ],
    "XEvent": [
        ("metadata_id", 1, "int64", False),
        ("offset_ps", 2, "int64", False),
        ("duration_ps", 3, "int64", False),
        ("stats", 4, "XStat", True),
        ("num_occurrences", 5, "int64", False),
    ],
    "XStat": [
        ("metadata_id", 1, "int64", False),
        ("double_value", 2, "double", False),
        ("uint64_value", 3, "uint64", False),
        ("int64_value", 4, "int64", False),
        ("str_value", 5, "string", False),
        ("bytes_value", 6, "bytes", False),
        ("ref_value", 7, "uint64", False),
    ],
    "XEventMetadata": [
        ("id", 1, "int64", False),
        ("name", 2, "string", False),
        ("display_name", 4, "string", False),
        ("stats", 5, "XStat", True),
    ],
    "XStatMetadata": [("id", 1, "int64", False), ("name", 2, "string", False)],
}

_HLO: dict[str, list[tuple[str, int, str, bool]]] = {
    "HloProto": [("hlo_module", 1, "HloModuleProto", False)],
    "HloModuleProto": [
        ("name", 1, "string", False),
        ("computations", 3, "HloComputationProto", True),
        ("id", 5, "int64", False),
        ("entry_computation_id", 6, "int64", False),
        ("stack_frame_index", 17, "StackFrameIndexProto", False),
    ],
    "HloComputationProto": [
        ("name", 1, "string", False),
        ("instructions", 2, "HloInstructionProto", True),
        ("id", 5, "int64", False),
        ("root_id", 6, "int64", False),
    ],
    "HloInstructionProto": [
        ("name", 1, "string", False),
        ("opcode", 2, "string", False),
        ("shape", 3, "ShapeProto", False),
        ("metadata", 7, "OpMetadata", False),
        ("fusion_kind", 11, "string", False),
        ("tuple_index", 13, "int64", False),
        ("custom_call_target", 28, "string", False),
        ("dot_dimension_numbers", 30, "DotDimensionNumbers", False),
        ("id", 35, "int64", False),
        ("operand_ids", 36, "int64", True),
        ("called_computation_ids", 38, "int64", True),
    ],
    "ShapeProto": [
        ("element_type", 2, "int32", False),
        ("dimensions", 3, "int64", True),
        ("tuple_shapes", 4, "ShapeProto", True),
    ],
    "DotDimensionNumbers": [("lhs_contracting_dimensions", 1, "int64", True)],
    "OpMetadata": [
        ("op_type", 1, "string", False),
        ("op_name", 2, "string", False),
        ("source_file", 3, "string", False),
        ("source_line", 4, "int32", False),
        ("stack_frame_id", 15, "int32", False),
    ],
    "StackFrameIndexProto": [
        ("file_names", 1, "string", True),
        ("function_names", 2, "string", True),
        ("file_locations", 3, "StackFrameIndexProto.FileLocation", True),
        ("stack_frames", 4, "StackFrameIndexProto.StackFrame", True),
    ],
    "StackFrameIndexProto.FileLocation": [
        ("file_name_id", 1, "int32", False),
        ("function_name_id", 2, "int32", False),
        ("line", 3, "int32", False),
    ],
    "StackFrameIndexProto.StackFrame": [
        ("file_location_id", 1, "int32", False),
        ("parent_frame_id", 2, "int32", False),
    ],
}


# message -> (oneof name, its fields): lets the decoder say which value a stat holds.
_ONEOFS = {
    "XStat": ("value", {"double_value", "uint64_value", "int64_value", "str_value", "bytes_value", "ref_value"}),
    "XEvent": ("data", {"offset_ps", "num_occurrences"}),
}


def _file(name: str, package: str, messages: dict[str, list[tuple[str, int, str, bool]]]) -> Any:
    fdp = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    protos: dict[str, Any] = {}
    for full in messages:  # parents before nested messages (dict order above)
        outer, _, inner = full.partition(".")
        if inner:
            msg = protos[outer].nested_type.add(name=inner)
            if full.endswith("Entry"):
                msg.options.map_entry = True
        else:
            msg = fdp.message_type.add(name=full)
        protos[full] = msg
        oneof_name, oneof_fields = _ONEOFS.get(full, ("", set()))
        if oneof_name:
            msg.oneof_decl.add(name=oneof_name)
        for field, number, type_, repeated in messages[full]:
            f = msg.field.add(name=field, number=number, label=_REP if repeated else _OPT)
            if field in oneof_fields:
                f.oneof_index = 0
            if type_ in _SCALARS:
                f.type = _SCALARS[type_]
            else:
                f.type = _T.TYPE_MESSAGE
                f.type_name = f".{package}.{type_}"
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file("kernelscope_xplane.proto", "ksxplane", _XPLANE))
_POOL.Add(_file("kernelscope_hlo.proto", "kshlo", _HLO))


def _message_class(full_name: str) -> Any:
    descriptor = _POOL.FindMessageTypeByName(full_name)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get(descriptor)
    return message_factory.MessageFactory(_POOL).GetPrototype(descriptor)  # protobuf < 4.22


XSpace: Any = _message_class("ksxplane.XSpace")
HloProto: Any = _message_class("kshlo.HloProto")

__all__ = ["HloProto", "XSpace"]
