"""One self-contained HTML file: the page's template, its CSS and JS inlined, the data as escaped JSON.

No CDN, no network request: a Content-Security-Policy forbids every fetch, and the data sits
in a ``<script type="application/json">`` element whose text cannot close it (``<``, ``>``,
``&`` and the JS line separators are written as ``\\uXXXX`` escapes). Above ``COMPRESS_ABOVE``
characters the JSON is gzip-compressed and base64-encoded; the page inflates it with the
browser's own ``DecompressionStream``.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from importlib import resources
from typing import Any

COMPRESS_ABOVE = 512 * 1024
_ASSETS = ("report.css", "icicle.js", "views.js", "lanes.js", "ranks.js", "app.js")
_JSON_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _asset(name: str) -> str:
    text = resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")
    if not name.endswith(".html") and ("</script" in text.lower() or "</style" in text.lower()):
        raise AssertionError(f"asset {name} would close its own element")  # a bug in the assets
    return text


def script_json(data: Any) -> str:
    """JSON that is safe as the text of a ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char, escape in _JSON_ESCAPES:  # str.replace per character is ~10x faster than str.translate here
        text = text.replace(char, escape)
    return text


def data_element(data: Any, compress_above: int = COMPRESS_ABOVE) -> str:
    text = script_json(data)
    if len(text) <= compress_above:
        return f'<script type="application/json" id="ks-data">{text}</script>'
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    return f'<script type="application/octet-stream" id="ks-data" data-encoding="gzip+base64">{packed}</script>'


def render_html(payload: dict[str, Any], compress_above: int = COMPRESS_ABOVE) -> str:
    page = _asset("report.html")
    title = html.escape(f"kernelscope report: {payload['header']['title']}"[:300])
    parts = {
        "{{TITLE}}": title,
        "{{CSS}}": _asset("report.css"),
        "{{DATA}}": data_element(payload, compress_above),
        "{{JS}}": "\n".join(_asset(name) for name in _ASSETS if name.endswith(".js")),
    }
    for marker, value in parts.items():
        before, sep, after = page.partition(marker)
        if not sep:
            raise AssertionError(f"template lacks {marker}")
        page = before + value + after  # each marker once; values are never scanned for markers
    return page
