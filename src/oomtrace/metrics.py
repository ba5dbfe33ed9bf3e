"""Prometheus metrics for node_exporter's textfile collector, written with prometheus-client.

    oomtrace_oom_kills_total{constraint="memcg",killer="kernel",unit="llama.service",
        pod_uid="",container_id="",comm="llama-server"} 3
    oomtrace_last_oom_timestamp_seconds 1.7947e+09
    oomtrace_early_warnings_total{kind="nvrm-no-memory"} 2
    oomtrace_warning_lead_seconds 193

No pid label (each kill would be a new series). The kernel's cgroup path names a pod by its uid
and a container by its id, never by name or namespace: join on kube_pod_info's `uid` for those.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics, generate_latest
from prometheus_client.openmetrics.exposition import ALLOWUTF8

from oomtrace import outputs
from oomtrace.explain import container_of
from oomtrace.model import Analysis, Episode, KillKind

KILL_LABELS = ("constraint", "killer", "unit", "pod_uid", "container_id", "comm")


class Metrics:
    def __init__(self) -> None:
        # A `_created` sample per series says when this process counted it: noise in a textfile.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        self.kills = Counter(
            "oomtrace_oom_kills",
            "OOM kills in the log read (export) or since the watcher started (watch), by cause and victim.",
            KILL_LABELS,
            registry=self.registry,
        )
        self.last_kill = Gauge(
            "oomtrace_last_oom_timestamp_seconds",
            "When the latest OOM kill happened (Unix time); absent before the first.",
            registry=self.registry,
        )
        self.warnings = Counter(
            "oomtrace_early_warnings",
            "Early warnings (NVRM NV_ERR_NO_MEMORY, page allocation failures, PSI, ...), by kind.",
            ("kind",),
            registry=self.registry,
        )
        self.lead = Gauge(
            "oomtrace_warning_lead_seconds",
            "How long before its first kill the first warning of the latest incident that had one came.",
            registry=self.registry,
        )
        self._last = 0.0

    def kill(self, episode: Episode, lead_s: float | None) -> None:
        self.kills.labels(*kill_labels(episode)).inc()
        when = episode.moment.time.timestamp() if episode.moment.time else None
        if when is not None and when >= self._last:
            self._last = when
            self.last_kill.set(when)
            if lead_s is not None:
                self.lead.set(lead_s)

    def counted(self, kind: KillKind, count: int) -> None:
        """Kills a long log counted, not kept (model.Elided): in the counter, never the gauges
        (the kills kept last are the latest)."""
        self.kills.labels(*labels_of(kind)).inc(count)

    def warning(self, kind: str, count: int = 1) -> None:
        self.warnings.labels(kind).inc(count)

    def write(self, path: str, *, wait_for_reader: bool = True) -> None:
        """As write_to_textfile renders it; written by outputs' rules (atomically over a regular
        file, directly to a device or FIFO), which write_to_textfile's rename over the path is not.
        wait_for_reader=False: a FIFO with no reader (or a full one) is an OSError, not a wait."""
        data = generate_latest(self.registry, ALLOWUTF8)
        outputs.write_bytes(path, data, "--prom-textfile", wait_for_reader=wait_for_reader)


def kill_labels(episode: Episode) -> tuple[str, ...]:
    victim = episode.victim
    cgroup = episode.task_memcg or episode.memcg
    return labels_of(
        KillKind(episode.constraint, episode.killer, episode.unit, cgroup, victim.comm if victim else None)
    )


def labels_of(kind: KillKind) -> tuple[str, ...]:
    """KILL_LABELS' values for a kill of this kind."""
    pod, container = container_of(kind.cgroup)
    return (
        kind.constraint or ("" if kind.killer == "kernel" else "userspace"),
        kind.killer,
        kind.unit or "",
        pod or "",
        container[:12] if container else "",
        kind.comm or "",
    )


def from_analysis(analysis: Analysis) -> Metrics:
    """The metrics of everything a log holds: each kill, each warning run's count, the lead of
    the latest incident."""
    metrics = Metrics()
    lead_of = {e: i.lead_time_s for i in analysis.incidents for e in i.episode_ids[:1]}
    for episode in analysis.episodes:
        if episode.victim is None and episode.unit is None:
            continue  # a report whose kill line the log lost: no victim to count
        if not episode.proven:
            continue  # a claim anyone could have written (Episode.doubt): not counted as a kill
        metrics.kill(episode, lead_of.get(episode.id))
    if analysis.elided is not None:
        # The counter counts the whole log: a million kills are a million, not the 2,000 kept.
        for kind, count in analysis.elided.by_kind:
            if kind.comm is not None or kind.unit is not None:
                metrics.counted(kind, count)
    for run in analysis.warnings:
        metrics.warning(run.kind, run.count)
    return metrics
