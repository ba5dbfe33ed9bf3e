"""Userspace killers and watchers: systemd-oomd, earlyoom, nohang, slurm, Android's lmkd and lowmemorykiller.

Also oomtrace watch's own warnings. Each kind beside its matcher.
"""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind
from oomtrace.records import Record

# systemd-oomd: `Killed /user.slice/...scope due to memory used (...) / total (...) and swap
# used ...` (v248+), `Marked /...scope for killing due to ...` (v253+); and Facebook's oomd,
# which systemd-oomd grew from: `oomd attempting to kill N`.
_OOMD_KILL = lazy_compile(r"(?:Killed|Marked) (?P<cgroup>/\S+) (?:for killing )?due to (?P<reason>.*)")
_OOMD_ATTEMPT = lazy_compile(r"oomd attempting to kill (?P<what>\S+)(?P<rest>.*)")
# Its `Killed /…` with nothing after the path: the line was cut (every version prints `due to`
# after it), maybe inside the cgroup's name, which is then not said. Only from systemd-oomd.
_OOMD_KILL_CUT = lazy_compile(r"Killed (?P<cgroup>/\S+)\s*$")


_CUT_NOTE = " (the line is cut there: the cgroup's name may go on)"


def cut_oomd_path(reason: str) -> str | None:
    """The path of a cut `Killed /…` (its `reason`), which its unit's name may go on from."""
    if not reason.endswith(_CUT_NOTE):
        return None
    return reason.removesuffix(_CUT_NOTE).removeprefix("Killed ")


def _oomd(record: Record, text: str) -> ev.Event | None:
    match = _OOMD_KILL.search(text)
    if match:
        return ev.UserspaceKill(
            record, "systemd-oomd", None, None, match["cgroup"], "SIGKILL", match["reason"]
        )
    if record.ident == "systemd-oomd" and (cut := _OOMD_KILL_CUT.match(text)) is not None:
        said = f"{cut.group(0).rstrip()}{_CUT_NOTE}"
        return ev.UserspaceKill(record, "systemd-oomd", None, None, None, "SIGKILL", said, cut=True)
    match = _OOMD_ATTEMPT.search(text)
    if match:
        what = match["what"].rstrip(",.:")
        pid = int(what) if what.isdigit() else None
        cgroup = what if what.startswith("/") else None
        return ev.UserspaceKill(record, "systemd-oomd", None, pid, cgroup, "SIGKILL", text[match.start() :])
    return None


# systemd-oomd 247 and 248 log only their decision, before acting (and a failure after, if any):
# `Memory pressure for /x is greater than 10 for more than 10 seconds and there was reclaim
# activity`, `Swap used (N) / total (N) is more than 90%`. Later versions print these at debug
# level in other words (`is 12.34% > 10.00% for > 20s`, `more than 90.00%`), followed by
# their `Killed` line: the whole-number forms below are the old versions' only.
_OOMD_DECIDED = lazy_compile(
    r"Memory pressure for (?P<cgroup>/\S*) is greater than \d{1,3} for more than \d{1,9} seconds and there "
    r"was reclaim activity|Swap used \(\d{1,20}\) / total \(\d{1,20}\) is more than \d{1,3}%$"
)
_OOMD_FAILED = lazy_compile(r"Failed to kill any cgroup\(s\)|oomd dry-run: Would have tried to kill")


def _oomd_decided(record: Record, text: str) -> ev.Event | None:
    match = _OOMD_DECIDED.search(text)
    if match:
        # The cgroup under pressure is not the victim: oomd kills one of its descendants.
        return ev.UserspaceKill(
            record, "systemd-oomd", None, None, None, "SIGKILL", text[match.start() :], decided=True
        )
    if _OOMD_FAILED.search(text):
        return ev.KillFailed(record, "systemd-oomd")
    return None


SYSTEMD_OOMD_DECISION = MessageKind(
    "systemd-oomd-decision",
    ("there was reclaim activity", "Swap used (", "Failed to kill any cgroup", "oomd dry-run"),
    _oomd_decided,
    "systemd-oomd 247/248 decided to kill under a cgroup, or says it did not",
    "Memory pressure for /user.slice/user-1000.slice/user@1000.service is greater than 10 for more "
    "than 10 seconds and there was reclaim activity",
    origin="any",
    begins=("Memory pressure for /", "Swap used (", "Failed to kill any cgroup", "oomd dry-run"),
)


SYSTEMD_OOMD_KILL = MessageKind(
    "systemd-oomd-kill",
    ("Killed /", "Marked /", "oomd attempting to kill"),
    _oomd,
    "systemd-oomd killed a cgroup",
    "Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4321.scope "
    "due to memory pressure for /user.slice/user-1000.slice/user@1000.service being 61.39% > 50.00% "
    "for > 20s with reclaim activity",
    origin="any",
    begins=("Killed /", "Marked /", "oomd attempting"),
)


# earlyoom's kill line across its versions: `sending SIGTERM to process N uid N "comm": badness N,
# VmRSS N MiB` (1.6+; 1.8 adds `oom_score N, oom_score_adj N` and the cmdline), the same without
# uid (1.3-1.5), `killing process N "comm" with signal 15: badness N, VmRSS N MiB` (1.2),
# `Killing process 'comm' with signal 15, pid: N, badness: N, VmRSS: N MiB` (1.1), and
# `Killing process N comm with oom_score N` (older).
_EARLYOOM_KILL = lazy_compile(
    r"(?:sending (?P<sig>SIG\w+) to process|[Kk]illing process) (?P<pid>\d{1,9})(?: uid (?P<uid>\d{1,9}))?"
    r' (?:"(?P<comm>[^"]*)"|\((?P<comm2>[^)]*)\)|(?P<comm3>[^\s:,]+))'
)
_EARLYOOM_OLD = lazy_compile(
    r"Killing process '(?P<comm>[^']*)' with signal (?P<sig>\d{1,2}), pid: (?P<pid>\d{1,9})"
)
_EARLYOOM_SIGNAL = lazy_compile(r"with signal (\d{1,2})")
_EARLYOOM_BADNESS = lazy_compile(r"(?:badness|oom_score):? (-?\d{1,9})")
_EARLYOOM_ADJ = lazy_compile(r"oom_score_adj:? (-?\d{1,9})")
_EARLYOOM_RSS = lazy_compile(r"VmRSS:? (\d{1,12}) MiB")
_SIGNALS = {"9": "SIGKILL", "15": "SIGTERM"}


def _earlyoom(record: Record, text: str) -> ev.Event | None:
    old = _EARLYOOM_OLD.search(text)
    match = old or _EARLYOOM_KILL.search(text)
    if not match:
        return None
    signal = match["sig"] if not old else None
    number = _EARLYOOM_SIGNAL.search(text, match.start())
    if signal is None and number is not None:
        signal = _SIGNALS.get(number[1], f"signal {number[1]}")
    # `Killing process N comm` is also the wording of other tools: only earlyoom's own records,
    # or a line that says its signal as earlyoom does.
    if signal is None and record.ident != "earlyoom":
        return None
    rest = text[match.end() :]
    badness = _EARLYOOM_BADNESS.search(rest)
    adj = _EARLYOOM_ADJ.search(rest)
    rss = _EARLYOOM_RSS.search(rest)
    comm = match["comm"] if old else match["comm"] or match["comm2"] or match["comm3"]
    uid = None if old else match["uid"]
    return ev.UserspaceKill(
        record,
        "earlyoom",
        comm,
        int(match["pid"]),
        None,
        signal or "SIGTERM",
        text[match.start() :],
        int(rss[1]) * 1024 if rss else None,
        int(badness[1]) if badness else None,
        int(adj[1]) if adj else None,
        int(uid) if uid else None,
    )


EARLYOOM_KILL = MessageKind(
    "earlyoom-kill",
    ("SIGTERM to process", "SIGKILL to process", "illing process"),
    _earlyoom,
    "earlyoom killed a process",
    'sending SIGTERM to process 1234 uid 1000 "firefox": badness 900, VmRSS 3012 MiB',
    origin="any",
    begins=("sending SIG",),
)


_EARLYOOM_LOW = lazy_compile(r"low memory! at or below (?P<what>SIG\w+) limits")


def _earlyoom_low(record: Record, text: str) -> ev.Event | None:
    low = _EARLYOOM_LOW.search(text)
    return ev.EarlyWarning(record, "earlyoom-low-memory", text[low.start() :], "earlyoom") if low else None


EARLYOOM_LOW_MEMORY = MessageKind(
    "earlyoom-low-memory",
    ("low memory!",),
    _earlyoom_low,
    "earlyoom saw memory below its limits",
    "low memory! at or below SIGTERM limits: mem 10.00%, swap  5.00%",
    origin="any",
    warning=True,
)


_NOHANG_KILL = lazy_compile(
    r"(?P<sig>SIGTERM|SIGKILL).*?\b(?:PID|pid):? (?P<pid>\d{1,9}).*?\b(?:Name|name):? (?P<comm>\S+)"
)


# nohang's own wording of its corrective action, with or without a journal prefix.
_NOHANG_ACTION = lazy_compile(
    r"Send (?P<sig>SIG\w+) to (?:the victim|(?P<comm>\S+))"
    r"|Run the command: kill -(?P<ksig>\w+) (?P<pid>\d{1,9})"
)


def _nohang(record: Record, text: str) -> ev.Event | None:
    match = _NOHANG_KILL.search(text) if record.ident == "nohang" else None
    if match:
        return ev.UserspaceKill(record, "nohang", match["comm"], int(match["pid"]), None, match["sig"], text)
    action = _NOHANG_ACTION.search(text)
    if not action:
        return None
    pid = int(action["pid"]) if action["pid"] else None
    signal = action["sig"] or f"SIG{action['ksig']}"
    return ev.UserspaceKill(record, "nohang", action["comm"], pid, None, signal, text[action.start() :])


NOHANG_KILL = MessageKind(
    "nohang-kill",
    ("SIGTERM", "SIGKILL", "Run the command: kill"),
    _nohang,
    "nohang killed a process",
    "  Send SIGTERM to the victim; total response time: 13246 ms",
    origin="any",
)


# nohang names the process it chose before it acts on it (`Process with highest badness ...:`).
_NOHANG_CHOSEN = lazy_compile(
    r"\s*PID: (?P<pid>\d{1,9}), Name: (?P<comm>\S.*?), badness: (?P<badness>-?\d{1,9})\s*$"
)


def _nohang_chosen(record: Record, text: str) -> ev.Event | None:
    match = _NOHANG_CHOSEN.match(text)
    if not match:
        return None
    return ev.VictimNamed(record, "nohang", int(match["pid"]), match["comm"], int(match["badness"]))


NOHANG_VICTIM = MessageKind(
    "nohang-victim",
    (", Name: ",),
    _nohang_chosen,
    "nohang names the process it chose (its kill line may not)",
    "  PID: 12297, Name: tail, badness: 727",
    origin="any",
)


# Slurm's step daemon reports the kernel's kills in the job's memory cgroup.
_SLURM_OOM = lazy_compile(r"Detected (?P<n>\d{1,9}) oom[-_]kill event\(s\) in (?P<step>.+?) cgroup")


def _slurm(record: Record, text: str) -> ev.Event | None:
    match = _SLURM_OOM.search(text)
    if not match:
        return None
    return ev.UserspaceKill(
        record,
        "kernel",
        None,
        None,
        match["step"],
        None,
        text[match.start() :],
        constraint="memcg",
        trigger="slurmstepd",
    )


SLURM_OOM_EVENT = MessageKind(
    "slurm-oom-event",
    ("oom-kill event", "oom_kill event"),
    _slurm,
    "slurm saw the kernel kill in a job's cgroup",
    "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup.",
    origin="any",
)


# Android's userspace lmkd: `Kill 'com.x' (1234), uid 10123, oom_score_adj 900 to free 4567kB rss,
# 890kB swap; reason: ...` (older: `oom_adj 906 to free 42316kB`).
_LMKD_KILL = lazy_compile(
    r"Kill '(?P<comm>[^']+)' \((?P<pid>\d{1,9})\), (?:uid (?P<uid>\d{1,9}), )?"
    r"(?:oom_score_adj|oom_adj|adj) (?P<adj>-?\d{1,5})(?:.*?(?P<rss>\d{1,12})kB(?: rss)?)?"
)
# A vendor's lmkd (a Samsung phone's) words its kill `Reclaim 'com.x' (30364), uid 10274,
# oom_score_adj 700, state 15` and then AOSP's `to free 113444kB rss, 138548kB swap; reason: min
# watermark`, and the process exits on signal 9 at once. Only with that `to free ...kB rss` is it
# read as a kill: a reclaim of a process's memory without one is not a death.
_LMKD_RECLAIM = lazy_compile(
    r"Reclaim '(?P<comm>[^']+)' \((?P<pid>\d{1,9})\), (?:uid (?P<uid>\d{1,9}), )?"
    r"oom_score_adj (?P<adj>-?\d{1,5})(?:, state \d{1,5})?\s+to free (?P<rss>\d{1,12})kB rss"
)


def _lmkd(record: Record, text: str) -> ev.Event | None:
    match = _LMKD_KILL.search(text) or _LMKD_RECLAIM.search(text)
    if not match:
        return None
    return ev.UserspaceKill(
        record,
        "lmkd",
        match["comm"],
        int(match["pid"]),
        None,
        "SIGKILL",
        text[match.start() :],
        int(match["rss"]) if match["rss"] else None,
        None,
        int(match["adj"]),
        int(match["uid"]) if match["uid"] else None,
        # lmkd logs under the tag `lowmemorykiller`; the daemon that decided is lmkd.
        trigger="lmkd",
        trigger_pid=record.pid,
    )


LMKD_KILL = MessageKind(
    "lmkd-kill",
    ("Kill '", "Reclaim '"),
    _lmkd,
    "Android's lmkd killed an app",
    "Kill 'com.android.chrome' (12345), uid 10123, oom_score_adj 900 to free 123456kB rss, 7890kB swap",
    origin="any",
    begins=("Kill '", "Reclaim '"),
)


# `Killing 'com.x' (1234), ...` is two writers' wording. The Android kernel's staging driver
# (drivers/staging/android/lowmemorykiller.c): `Killing 'com.x' (1234), adj 900,\n   to free
# 4567kB on behalf of 'kswapd0' (45) because\n   cache ...` (Qualcomm's adds `(tgid N)` after the
# pid; /dev/kmsg prints its newlines as `\x0a`); its continuation lines are joined to it
# (rejoin.py), or lost in a paste. And Android 8's userspace lmkd, under the same tag:
# `Killing 'com.x' (4563), uid 10010, adj 906` then `   to free 39444kB because ...` (logcat
# prints each line with its own prefix; rejoin.py joins the second, indented, to the first).
# The uid is lmkd's alone: the kernel's driver never prints it.
_GAP = r"(?:\s|\\x0a)*"
_LOWMEM = lazy_compile(
    rf"Killing '(?P<comm>[^']*)' \((?P<pid>\d{{1,9}})\)(?: \(tgid \d{{1,9}}\))?,{_GAP}"
    rf"(?:uid (?P<uid>\d{{1,9}}),{_GAP})?(?:adj|oom_adj|oom_score_adj) (?P<adj>-?\d{{1,5}})"
    rf"(?:,?{_GAP}to free (?P<free>\d{{1,12}})kB"
    r"(?: on behalf of '(?P<by>[^']*)' \((?P<by_pid>\d{1,9})\))?)?"
)


def _lowmemorykiller(record: Record, text: str) -> ev.Event | None:
    match = _LOWMEM.search(text)
    if not match:
        return None
    lmkd = match["uid"] is not None
    return ev.UserspaceKill(
        record,
        "lmkd" if lmkd else "lowmemorykiller",
        match["comm"],
        int(match["pid"]),
        None,
        "SIGKILL",
        text[match.start() :],
        int(match["free"]) if match["free"] else None,
        None,
        int(match["adj"]),
        int(match["uid"]) if lmkd else None,
        trigger="lmkd" if lmkd else match["by"],
        trigger_pid=record.pid if lmkd else int(match["by_pid"]) if match["by_pid"] else None,
    )


LOWMEMORYKILLER_KILL = MessageKind(
    "lowmemorykiller-kill",
    ("Killing '",),
    _lowmemorykiller,
    "Android's kernel lowmemorykiller (or Android 8's lmkd) killed an app",
    "lowmemorykiller: Killing 'com.android.chrome' (12345), adj 900,",
    origin="any",
    begins=("lowmemorykiller:", "Killing '"),
)


_WATCH_WARNING = lazy_compile(r"warning (?P<kind>[a-z][\w-]{0,40}): (?P<text>.+)")


def _watch_warning(record: Record, text: str) -> ev.Event | None:
    match = _WATCH_WARNING.match(text)
    return ev.EarlyWarning(record, "watch-warning", match["text"], match["kind"]) if match else None


WATCH_WARNING = MessageKind(
    "watch-warning",
    ("warning ",),
    _watch_warning,
    "oomtrace watch saw memory run short (PSI, MemAvailable, a cgroup's memory events)",
    "warning psi-some: memory pressure some avg10 23.5% (warn at 10%)",
    origin="oomtrace-watch",
    warning=True,
)
