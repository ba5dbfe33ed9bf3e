"""What `why NAME` is asking about: a pid, or a name that may be a comm, a cut comm or a unit.

Resolved once from what the user typed and carried down, so the story and the verdict ask it
instead of matching the raw name again. Below story and verdict: imports only the model.
"""

from __future__ import annotations

import os

from oomtrace.frozen import Frozen
from oomtrace.model import Episode

# The kernel keeps 15 characters of a process name (TASK_COMM_LEN 16, with the NUL).
COMM_LEN = 15


class Target(Frozen):
    query: str
    """NAME as typed: the words of every headline that names the target."""
    by_pid: bool
    """NAME is all digits: a kill is the target's by its pid alone (`pid`)."""
    wanted: str
    """The name a comm is compared with: NAME without a path (`/usr/bin/llama-server`)."""

    @classmethod
    def of(cls, query: str) -> Target:
        return cls(query, query.isdigit(), os.path.basename(query.rstrip("/")) or query)

    @property
    def pid(self) -> int:
        """NAME as a pid (only where `by_pid`)."""
        return int(self.query)

    def names(self, comm: str) -> bool:
        """Does a kernel comm name the target? Handles the 15-character cut. A pid's digits
        match a comm of those digits too (a crash, a tasks-table row), as they always did."""
        if comm == self.query:
            return True  # names hold `/`, spaces and brackets: kworker/u8:2, CPU 0/KVM, runc:[2:INIT]
        if comm == self.wanted:
            return True
        return len(comm) >= COMM_LEN and self.wanted[:COMM_LEN] == comm[:COMM_LEN]

    def is_process(self, comm: str, pid: object) -> bool:
        """Is this process (a trigger, a tasks row) the target: its pid for a pid, else its name."""
        if self.by_pid:
            return isinstance(pid, int) and pid == self.pid
        return self.names(comm)

    def died_in(self, episode: Episode) -> bool:
        """Is the episode's victim the target: its pid, its name, or a kill in its systemd unit?"""
        if self.by_pid:
            return episode.victim is not None and episode.victim.pid == self.pid
        if episode.victim is not None and self.names(episode.victim.comm):
            return True
        # `why llama.service` (or `why llama` for llama.service) finds kills in that unit.
        unit = episode.unit
        return unit is not None and self.query in (unit, unit.rsplit(".", 1)[0])
