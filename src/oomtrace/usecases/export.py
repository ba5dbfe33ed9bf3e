"""`export`: the kills and early warnings in the input as Prometheus metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomtrace.usecases.reading import Say, read, redactor
from oomtrace.usecases.settings import Settings

if TYPE_CHECKING:
    from oomtrace.metrics import Metrics


def export_metrics(settings: Settings, say: Say) -> Metrics:
    from oomtrace.metrics import from_analysis  # prometheus-client: only this command needs it

    analysis, _ = read(settings, say)
    analysis = redactor(settings, analysis).apply(analysis)
    return from_analysis(analysis)
