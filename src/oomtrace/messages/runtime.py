"""Container runtimes' records of an OOM kill: containerd, Docker, the kubelet, kubectl.

Each is evidence of a kill whose kernel lines are elsewhere (the node's kernel log), read as
systemd's `killed by the OOM killer` unit record is: a kill with no kernel details. Each kind
beside its matcher, with a real line from tests/realworld/cases/.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind
from oomtrace.records import Record

RUNTIME = "container-runtime"
# A hostile `(x99999 over 1m)` must not make a log of one line a log of 99,999 kills.
MAX_REPEATS = 1000

# The kubelet's node events as `kubectl describe node|pod` prints them: `System OOM encountered`
# (1.9+, the kill of a process on the node outside any pod), `Cgroup OOM encountered, victim
# process: stress, pid: 470521` (1.27+); the table folds repeats into `12m (x4 over 25m)`.
_KUBELET_OOM = lazy_compile(
    r"(?P<what>System|Cgroup) OOM encountered"
    r"(?:, victim process: (?P<comm>[^,\s]{1,200}), pid: (?P<pid>\d{1,9}))?"
)
_REPEATS = lazy_compile(r"\(x(?P<n>\d{1,9}) over [^)]{0,40}\)")


def _kubelet_event(record: Record, text: str) -> ev.Event | None:
    match = _KUBELET_OOM.search(text)
    if not match:
        return None
    repeats = _REPEATS.search(text, 0, match.start())
    count = min(int(repeats["n"]), MAX_REPEATS) if repeats else 1
    return ev.UserspaceKill(
        record,
        RUNTIME,
        match["comm"],
        int(match["pid"]) if match["pid"] else None,
        None,
        None,
        f"the kubelet's {match['what']}OOM event: {text[match.start() :].strip()}",
        count=count,
    )


KUBELET_OOM_EVENT = MessageKind(
    "kubelet-oom-event",
    ("OOM encountered",),
    _kubelet_event,
    "the kubelet saw an OOM kill on its node (SystemOOM, CgroupOOM events)",
    "Cgroup OOM encountered, victim process: stress, pid: 470521",
    origin="any",
)


# cAdvisor inside the kubelet: `Created an OOM event in container "/kubepods/..." at 2017-...`.
_CADVISOR_OOM = lazy_compile(r'Created an OOM event\b(?: in container "(?P<cgroup>/[^"]{0,400})")?')


def _cadvisor(record: Record, text: str) -> ev.Event | None:
    match = _CADVISOR_OOM.search(text)
    if not match:
        return None
    reason = f"the kubelet's record: {text[match.start() :].strip()}"
    return ev.UserspaceKill(record, RUNTIME, None, None, match["cgroup"], None, reason)


KUBELET_CREATED_OOM_EVENT = MessageKind(
    "kubelet-created-oom-event",
    ("Created an OOM event",),
    _cadvisor,
    "the kubelet (cAdvisor) recorded an OOM kill in a container",
    # Cut by the paste it comes from (tests/realworld/cases/user2-k8s-kubelet-journal-oom-event-*).
    "I1010 17:41:57.858757    4991 manager.go:1126] Created an OOM event in containe",
    origin="any",
)


# containerd's `TaskOOM event container_id:"4bcba7fc…"` (in its logfmt `msg=`, quotes escaped),
# and its newer `TaskOOM event &TaskOOM{ContainerID:4bcba7fc…}`.
_TASK_OOM = lazy_compile(r"TaskOOM event\b")
_CONTAINER_ID = lazy_compile(r"(?<![0-9a-f])[0-9a-f]{12,64}(?![0-9a-f])")


# containerd's logfmt stamp, which holds the year a journal's `Sep 01 19:12:33` prefix lacks.
_LOGFMT_TIME = lazy_compile(r'\btime="(?P<time>\d{4}-\d\d-\d\dT[0-9:.]{8,20}(?:Z|[+-]\d\d:?\d\d))"')


def _containerd(record: Record, text: str) -> ev.Event | None:
    match = _TASK_OOM.search(text)
    if not match:
        return None
    found = _CONTAINER_ID.search(text, match.end(), match.end() + 80)
    named = f" in container {found.group(0)[:12]}" if found else ""
    stamp = _LOGFMT_TIME.search(text, 0, match.start())
    at = iso_time(stamp["time"]) if stamp else None
    return ev.UserspaceKill(
        record,
        RUNTIME,
        None,
        None,
        None,
        None,
        f"containerd's TaskOOM event{named}",
        at=at,
        at_raw=stamp["time"] if stamp and at else None,
    )


def iso_time(text: str) -> datetime | None:
    """An RFC 3339 time as runtimes print it (nanoseconds, `Z`), or None where it is no time or
    Docker's `0001-01-01T00:00:00Z` (a container that never ended)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None or when.year < 1971:
        return None
    return when


CONTAINERD_TASK_OOM = MessageKind(
    "containerd-task-oom",
    ("TaskOOM event",),
    _containerd,
    "containerd saw an OOM kill in a container (TaskOOM)",
    'time="2023-09-01T19:12:33.012922721Z" level=info msg="TaskOOM event '
    'container_id:\\"4bcba7fc4369fee4d7d2e6263b58fce52cfc928c6a31cfac4d43c838708991ce\\""',
    origin="any",
)


# `docker events`: `2019-05-04T18:05:45.011072877-05:00 container oom 29d72966… (image=…,
# name=k8s_notebook_…)`; the attributes are sorted by key, so `name=` comes late, often wrapped.
_DOCKER_OOM = lazy_compile(r"\bcontainer oom (?P<id>[0-9a-f]{12,64})\b")
_DOCKER_NAME = lazy_compile(r"[(,] name=(?P<name>[^,)\s]{1,200})")


def _docker_event(record: Record, text: str) -> ev.Event | None:
    match = _DOCKER_OOM.search(text)
    if not match:
        return None
    name = _DOCKER_NAME.search(text, match.end())
    return ev.UserspaceKill(
        record,
        RUNTIME,
        name["name"] if name else None,
        None,
        None,
        None,
        f"Docker's event: container oom {match['id'][:12]}",
    )


DOCKER_OOM_EVENT = MessageKind(
    "docker-oom-event",
    ("container oom ",),
    _docker_event,
    "Docker saw an OOM kill in a container (docker events)",
    "container oom 29d72966e0beb17d9b0b9fbcbfc734e2df2eb5428690115f9b24430357de08e5 "
    "(annotation.io.kubernetes.container.hash=cad60de0, ",
    origin="any",
)


# A container's last end as the runtime keeps it: `kubectl describe pod`'s `Reason: OOMKilled`,
# the kubelet's JSON status `"reason": "OOMKilled"` (2014: `"OOM Killed"`), `kubectl get pod -o
# yaml`'s `reason: OOMKilled`, `docker inspect`'s `"OOMKilled": true` (its `false` is every other
# container's).
STATUS_REASON = "the container's status"
_TERMINATED = lazy_compile(
    r'(?:^|\s)Reason:\s+OOMKilled\b|"reason":\s*"OOM ?Killed"|"OOMKilled":\s*true\b'
    r'|^\s*(?:- )?reason:\s+"?OOMKilled"?\s*$'
)
_YAML_REASON = lazy_compile(r'^(?P<indent>\s*)(?:- )?reason:\s+"?OOMKilled"?\s*$')


def _terminated(record: Record, text: str) -> ev.Event | None:
    match = _TERMINATED.search(text)
    if not match:
        return None
    said = " ".join(match.group(0).split())
    # A status on one line (`docker inspect` compacted, `{"OOMKilled":true,…,"FinishedAt":"…"}`)
    # holds its end on the same line; else the Finished line below is joined (episodes/containers.py).
    finished = _FINISHED.search(text, match.end())
    at = _finished_time(finished) if finished else None
    return ev.UserspaceKill(
        record,
        RUNTIME,
        None,
        None,
        None,
        None,
        f"{STATUS_REASON}: {said}",
        at=at,
        at_raw=(finished["iso"] or finished["rfc"]) if finished and at else None,
    )


CONTAINER_OOMKILLED = MessageKind(
    "container-oomkilled",
    ("OOMKilled", "OOM Killed"),
    _terminated,
    "a container's status says the OOM killer ended it (kubectl describe, docker inspect)",
    "  Reason:       OOMKilled",
    origin="any",
)


# The end of a container as its status prints it: `kubectl describe`'s `Finished:     Fri, 15 Sep
# 2023 09:56:17 +0200` (RFC 1123 with a numeric zone), `docker inspect`'s `"FinishedAt":
# "2023-05-08T08:05:05.514785974Z"`, the kubelet's JSON `"finishedAt": "2014-12-18T23:22:26Z"`.
_FINISHED = lazy_compile(
    r"(?:^|\s)Finished:\s+(?P<rfc>\w{3}, \d\d? \w{3} \d{4} \d\d:\d\d:\d\d [+-]\d{4})"
    r'|"(?:FinishedAt|finishedAt)":\s*"(?P<iso>[^"]{10,40})"'
)


def _finished_time(match: re.Match[str]) -> datetime | None:
    if match["iso"]:
        return iso_time(match["iso"])
    try:
        when = parsedate_to_datetime(match["rfc"])
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _finished(record: Record, text: str) -> ev.Event | None:
    match = _FINISHED.search(text)
    if not match:
        return None
    at = _finished_time(match)
    if at is None:
        return None
    return ev.ContainerFinished(record, at, match["iso"] or match["rfc"])


CONTAINER_FINISHED = MessageKind(
    "container-finished",
    ("Finished:", "FinishedAt", "finishedAt"),
    _finished,
    "a container's end in its status (the time of an OOMKilled reason just above it)",
    "  Finished:     Fri, 15 Sep 2023 09:56:17 +0200",
    origin="any",
)


# A container's status names its container, and may print its end, a few lines above its reason:
# the kubelet's JSON (2014) keys the container's object by its name (`"oom-test": {` holding
# `"state": {"termination": {…"reason": "OOM Killed"`); `kubectl get pod -o json` sorts keys, so
# a `"state"` object follows the container's `"name"` and a `"terminated"` object prints its
# `"finishedAt"` above its `"reason"`; `kubectl describe pod` heads each container's block with
# its name (`  web:` under `Containers:`) and prints `State:`/`Last State:` in it. The look-back is
# bounded by this many lines and by the block: never another container's object or heading.
CONTEXT_LINES = 24
# How far (in lines) a container's `Finished:` may follow its `Reason: OOMKilled`: kubectl
# prints Exit Code, Signal, Started and Finished under the Reason (3-4 lines), docker inspect
# Dead, Pid, ExitCode, Error, StartedAt and FinishedAt under `"OOMKilled": true` (6); the next
# container's block is a dozen lines and more below, and its end is never this one's.
FINISHED_LINES = 8


def is_status(text: str) -> bool:
    """Does the line hold a container status's OOM reason (whose name and end lie around it)?"""
    return ("OOM" in text and "Killed" in text) and _TERMINATED.search(text) is not None


def in_status(text: str) -> bool:
    """Is the line a container status's reason or end (`finishedAt` may come right above the
    reason): the lines around it are a status's look-back (sources/bigfile.py reads them)."""
    return is_status(text) or ("inished" in text and _FINISHED.search(text) is not None)


_JSON_KEY = lazy_compile(r'"(?P<key>[^"\\]{1,253})":\s*(?P<value>.*?),?$')
_JSON_STRING = lazy_compile(r'"(?P<text>[^"\\]{1,253})"')
_NAME = lazy_compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_STATE_LINE = lazy_compile(r"(?:Last (?:Termination )?)?State:\s+Terminated$")
_TERMINATED_KEYS = ("terminated", "termination")
_STATE_KEYS = ("state", "lastState")


def container_context(reason: str, above: list[str]) -> tuple[str | None, str | None]:
    """The container's name and its end (`finishedAt` as printed) that the lines just `above` a
    status's reason line (nearest last, contiguous) give, each None where they do not say."""
    if _TERMINATED.search(reason) is None:
        return None, None
    if reason.lstrip().startswith('"'):
        return _json_context(above)
    if (yaml := _YAML_REASON.match(reason)) is not None:
        return _yaml_context(len(yaml["indent"]), above)
    return _heading_context(reason, above), None


def name_below(reason: str, below: list[str]) -> str | None:
    """The container's name printed below its reason, in `kubectl get pod -o json` or `-o yaml`:
    keys are sorted, so a `lastState` object prints before the container's `name` (a `state`
    prints after it: its name is above, container_context). Read only where the lines between
    close the reason's `terminated` and `lastState` and nothing else; None otherwise."""
    if reason.lstrip().startswith('"') and _TERMINATED.search(reason) is not None:
        return _json_name_below(below)
    if (yaml := _YAML_REASON.match(reason)) is not None:
        return _yaml_name_below(len(yaml["indent"]), below)
    return None


def _json_name_below(below: list[str]) -> str | None:
    closed = 0  # objects closed since the reason: its `terminated`, then its `lastState`
    for line in below:
        text = line.strip()
        if text in ("}", "},"):
            closed += 1
            if closed > 2:
                return None
            continue
        key = _JSON_KEY.match(text)
        if key is None or text.endswith(("{", "[")):
            return None
        if closed == 2:
            value = _JSON_STRING.fullmatch(key["value"])
            return _name(value["text"]) if key["key"] == "name" and value else None
    return None


def _yaml_name_below(reason_indent: int, below: list[str]) -> str | None:
    # `lastState:` at the container's indent, `terminated:` two in, the reason two more.
    container = reason_indent - 4
    for line in below:
        key = _YAML_KEY.match(line)
        if key is None:
            return None
        indent = _yaml_indent(key)
        if indent > container:
            continue  # the terminated object's own keys (startedAt)
        if indent == container and key["key"] == "name":
            return _name(key["value"].strip('"'))
        return None
    return None


# `  name: web`, `    finishedAt: "2019-08-29T00:51:41Z"`: a YAML key, its value on its line.
_YAML_KEY = lazy_compile(
    r"(?P<indent>\s*)(?P<dash>- )?(?P<key>[A-Za-z][\w.-]{0,63}):(?:\s+(?P<value>\S.*?))?\s*$"
)


def _yaml_indent(key: re.Match[str]) -> int:
    """Where a key stands: a list item's first key (`- name: web`) two past its dash."""
    return len(key["indent"]) + (2 if key["dash"] else 0)


def _yaml_context(reason_indent: int, above: list[str]) -> tuple[str | None, str | None]:
    """`kubectl get pod -o yaml`: the reason's `terminated` mapping above it (its `finishedAt`),
    then `state:` or `lastState:`, then the container's own keys: its `name` where it prints
    before the state (a `state`), up to the `- ` that begins the container's item."""
    finished = None
    container = reason_indent - 4
    depth = "terminated"  # which mapping the walk is in: terminated, its state, the container
    for line in reversed(above):
        key = _YAML_KEY.match(line)
        if key is None:
            return None, finished
        indent, name = _yaml_indent(key), key["key"]
        if depth == "terminated":
            if indent == reason_indent:
                if name == "finishedAt" and key["value"]:
                    finished = key["value"].strip('"')
                continue
            if indent != reason_indent - 2 or name not in _TERMINATED_KEYS:
                return None, finished
            depth = "state"
        elif depth == "state":
            if indent != container or name != "state":
                return None, finished  # a lastState's name prints below it (name_below)
            depth = "container"
        elif indent > container:
            continue  # another key's mapping of the same container (lastState above state)
        elif indent == container:
            if name == "name":
                return _name((key["value"] or "").strip('"')), finished
            if key["dash"]:
                return None, finished  # the item's first key, and no name before the state
        else:
            return None, finished
    return None, finished


def _json_context(above: list[str]) -> tuple[str | None, str | None]:
    keys: list[str] = []  # the keys of the objects holding the reason, innermost first
    nested = 0  # how deep inside a sibling object (closed above the reason) the walk is
    finished = None
    for line in reversed(above):
        text = line.strip()
        if not text:
            break
        if text.startswith(("}", "]")):
            nested += 1
            continue
        key = _JSON_KEY.match(text)
        if text.endswith(("{", "[")):
            if nested:
                nested -= 1
                continue
            if key is None:
                break  # a bare `{`: an array's element (another container) begins above
            if _in_state(keys):
                return _name(key["key"]), finished
            keys.append(key["key"])
            if len(keys) > 2:
                break
            continue
        if nested:
            continue
        if key is None:
            break  # not a key: no JSON object here
        if not keys and key["key"] in ("finishedAt", "FinishedAt"):
            value = _JSON_STRING.fullmatch(key["value"])
            finished = value["text"] if value else None
        elif _in_state(keys) and key["key"] == "name":
            value = _JSON_STRING.fullmatch(key["value"])
            return (_name(value["text"]) if value else None), finished
    return None, finished


def _in_state(keys: list[str]) -> bool:
    """Is the walk in the container's object: the reason's `terminated` inside its `state`?"""
    return len(keys) == 2 and keys[0] in _TERMINATED_KEYS and keys[1] in _STATE_KEYS


def _name(text: str) -> str | None:
    return text if _NAME.fullmatch(text) else None


def _heading_context(reason: str, above: list[str]) -> str | None:
    """kubectl describe: the `State:`/`Last State:` line right above the reason, then the first
    line less indented than it, which must be the container's heading (`  web:`)."""
    state_indent = None
    for line in reversed(above):
        text = line.strip()
        if not text:
            return None
        indent = _indent(line)
        if state_indent is None:
            if indent >= _indent(reason) or not _STATE_LINE.match(text):
                return None
            state_indent = indent
        elif indent < state_indent:
            heading = text[:-1] if text.endswith(":") else ""
            return heading if heading != "Containers" and _name(heading) else None
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def same_status(between: list[str]) -> bool:
    """Are the lines between a reason and a `Finished` line below it of the same status: no
    object closed or opened, no blank line (then that end is another container's)?"""
    for line in between:
        text = line.strip()
        if not text or text.startswith(("}", "]")) or text.endswith(("{", "[")):
            return False
    return True


# Android's ActivityManager: `Process com.android.documentsui (pid 4563) has died: cch+6CEM`
# (older: `has died.`, `has died: fg`). It sees an app die for any reason: only beside an lmkd
# kill of the same pid does it say something, and then it witnesses that kill.
_AM_DIED = lazy_compile(
    r"Process (?P<comm>\S{1,200}) \(pid (?P<pid>\d{1,9})\) has died(?:: (?P<state>\S{1,40}))?"
)


def _activity_died(record: Record, text: str) -> ev.Event | None:
    match = _AM_DIED.search(text)
    if not match:
        return None
    return ev.ProcessDied(record, match["comm"], int(match["pid"]), match["state"])


ACTIVITY_MANAGER_DIED = MessageKind(
    "activitymanager-died",
    ("has died",),
    _activity_died,
    "Android's ActivityManager saw an app die (a witness of an lmkd kill, no kill of its own)",
    "Process com.android.documentsui (pid 4563) has died: cch+6CEM ",
    origin="any",
)


# Zygote, every app's parent, on a child's death by a signal: SIGKILL (9) is lmkd's; another
# signal (a crash's 11, 6) witnesses no kill.
_ZYGOTE_EXITED = lazy_compile(
    r"Process (?P<pid>\d{1,9}) exited due to signal 9\b(?: \((?P<name>[^)]{1,40})\))?"
)


def _zygote_exited(record: Record, text: str) -> ev.Event | None:
    match = _ZYGOTE_EXITED.search(text)
    if not match:
        return None
    return ev.ProcessDied(record, None, int(match["pid"]), match["name"], who="Zygote")


ZYGOTE_EXITED = MessageKind(
    "zygote-exited",
    ("exited due to signal",),
    _zygote_exited,
    "Android's Zygote saw an app die of SIGKILL (a witness of an lmkd kill, no kill of its own)",
    "Process 30364 exited due to signal 9 (Killed)",
    origin="any",
)
