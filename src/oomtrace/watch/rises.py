"""A cgroup memory-event counter that rose, and the kill just told in that cgroup it belongs to.

The watcher holds a rise back while a kill may still be told, then says it as part of that kill
or as a warning of its own (Watcher._say_rises); this module only matches and words. No I/O.
"""

from __future__ import annotations

from collections.abc import Reversible
from datetime import datetime

from oomtrace.frozen import Frozen

# A cgroup's memory-event counters are sampled once a second and the log may lag them: a rise
# this close to a kill told in that cgroup is that kill, and an oom/oom_kill rise waits this long
# for the kill line before it is said on its own.
FOLD_S = 3.0


class Told(Frozen):
    """A kill just told, for the cgroup counters that rise with it."""

    at: float
    cgroups: tuple[str, ...]
    """Its memcg and task memcg, as the log names them (`/system.slice/llama.service`)."""
    victim: str
    pid: int | None


class Rise(Frozen):
    """A cgroup memory-event counter that rose, held back while a kill it may belong to is told."""

    at: float
    wall: datetime
    path: str
    event: str
    rise: int
    total: int


def told_in(recent: Reversible[Told], path: str, at: float) -> Told | None:
    """The kill of `recent` (newest last) told within FOLD_S of `at` in the cgroup at `path`
    or one inside it, if there is one: then the rise is that kill's."""
    inside = cgroup_name(path)
    for told in reversed(recent):
        if abs(told.at - at) <= FOLD_S and any(
            c == inside or c.startswith(inside.rstrip("/") + "/") for c in told.cgroups
        ):
            return told
    return None


def rise_text(rise: Rise) -> str:
    name = rise.path.rsplit("/", 1)[-1]
    return f"{name}: memory {rise.event} events +{rise.rise} (now {rise.total})"


def cgroup_name(path: str) -> str:
    """A cgroup directory as the kernel log names it: `/sys/fs/cgroup/memory/a/b` is `/a/b`."""
    inside = path
    for mount in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if path == mount or path.startswith(mount + "/"):
            inside = path[len(mount) :]
            break
    return inside or "/"
