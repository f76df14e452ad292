"""``kernelscope mcp``: a read-only MCP server (stdio) over profiles, traces, job stores and run history.

``tools`` holds the tools as plain functions ``(path, options) -> dict`` over the analysis functions;
``bounds`` keeps every answer small (row limits, a byte cap, an explicit ``truncated``); ``server``
registers the tools with the official MCP SDK and turns :class:`ToolFailure` into structured errors.
"""
