"""`report`: every incident in the range, each told as `why` tells it, with counts."""

from __future__ import annotations

from oomtrace.frozen import Frozen
from oomtrace.model import Analysis
from oomtrace.story import report
from oomtrace.storyview import ReportView, report_view
from oomtrace.usecases.reading import Say, read, redactor
from oomtrace.usecases.settings import Settings


class ReportResult(Frozen):
    """The incidents worded, redacted as shown."""

    analysis: Analysis
    view: ReportView


def report_incidents(settings: Settings, say: Say) -> ReportResult:
    analysis, untimed = read(settings, say)
    redacting = redactor(settings, analysis)
    document = redacting.apply(report(analysis, settings.since, settings.until, untimed))
    analysis = redacting.apply(analysis)
    return ReportResult(analysis, report_view(analysis, document))
