"""Runs sources through the parser and the episode builder."""

from __future__ import annotations

from collections.abc import Iterable

from oomtrace.episodes import EpisodeBuilder
from oomtrace.model import Analysis
from oomtrace.parse import parse_record
from oomtrace.sources.base import Source


def analyze(sources: Iterable[Source]) -> Analysis:
    builder = EpisodeBuilder()
    for source in sources:
        builder.begin_source(source.name, source.kind, source.boot_time())
        for record in source.records():
            builder.feed(record, parse_record(record))
    return builder.finish()
