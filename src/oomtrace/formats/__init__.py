"""Outputs: each format only renders what it is given."""

from __future__ import annotations

import importlib

from oomtrace.formats.base import Format

# The one registry of formats: name -> (module, class). A run imports only the format it renders
# (the JSON format's module alone pulls in the explanation's whole data model).
FORMATS: dict[str, tuple[str, str]] = {
    "text": ("oomtrace.formats.text", "TextFormat"),
    "json": ("oomtrace.formats.json", "JsonFormat"),
    "markdown": ("oomtrace.formats.markdown", "MarkdownFormat"),
}


def format_class(name: str) -> type[Format]:
    module, cls = FORMATS[name]
    found: type[Format] = getattr(importlib.import_module(module), cls)
    return found
