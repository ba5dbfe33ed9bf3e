"""Outputs: each format only renders what it is given."""

from __future__ import annotations

from oomtrace.formats.base import Format
from oomtrace.formats.json import JsonFormat
from oomtrace.formats.markdown import MarkdownFormat
from oomtrace.formats.text import TextFormat

FORMATS: dict[str, type[Format]] = {"text": TextFormat, "json": JsonFormat, "markdown": MarkdownFormat}
