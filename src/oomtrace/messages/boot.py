"""Lines about the log itself: a boot began, or records were lost (journald, printk, rate limits)."""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind
from oomtrace.records import Record

_SUPPRESSED = lazy_compile(r"(?P<fn>\w+): (?P<count>\d{1,20}) callbacks suppressed")


def _suppressed(record: Record, text: str) -> ev.Event | None:
    match = _SUPPRESSED.match(text)
    if not match or ("oom" not in match["fn"] and "out_of_memory" not in match["fn"]):
        return None
    return ev.CallbacksSuppressed(record, match["fn"], int(match["count"]))


# The banner init/main.c prints first at every boot: the release, then `(` and the builder.
_BOOT = lazy_compile(r"Linux version (?P<release>\S{1,200}) \(")


def _boot(record: Record, text: str) -> ev.Event | None:
    match = _BOOT.search(text)
    return ev.BootStarted(record, match["release"]) if match else None


BOOT_STARTED = MessageKind(
    "boot-started",
    ("Linux version ",),
    _boot,
    "a boot began (the kernel's first line)",
    # Paul Menzel's dmesg on linux-acpi, 2022-01-10 (mail-wrapped; its flowed breaks joined):
    # https://lore.kernel.org/linux-acpi/b177cb21-aa01-2408-9b26-164c028b6593@molgen.mpg.de/
    "Linux version 5.15.0-2-amd64 (debian-kernel@lists.debian.org) (gcc-11 (Debian 11.2.0-13) "
    "11.2.0, GNU ld (GNU Binutils for Debian) 2.37) #1 SMP Debian 5.15.5-2 (2021-12-18)",
    begins=("Linux version ",),
)


# Records that say the log itself is incomplete: journald could not keep up with the kernel,
# printk dropped lines, or a rate limit swallowed them.
_LOST = lazy_compile(
    r"Missed (?P<n>\d{1,20}) kernel messages"
    r"|(?:\*\* )?(?P<m>\d{1,20}) printk messages dropped"
    r"|(?P<fn>\w+): (?P<k>\d{1,20}) callbacks suppressed"
)


def _lost(record: Record, text: str) -> ev.Event | None:
    match = _LOST.search(text)
    if not match:
        return None
    if match["fn"] is not None:
        # Another function's rate limit is a count of its warning's repeats (REPEATS).
        return _suppressed(record, text[match.start() :]) if "oom" in match["fn"] else None
    what = "journald" if match["n"] is not None else "printk"
    return ev.EarlyWarning(record, "lost-messages", text[match.start() :], what)


LOST_MESSAGES = MessageKind(
    "lost-messages",
    ("Missed ", "messages dropped", "callbacks suppressed"),
    _lost,
    "records were lost: the log is incomplete",
    "Missed 1204 kernel messages",
    origin="any",
    begins=("Missed ",),
    warning=True,
)


# A paste's `NVRM: (repeats)`: the writer's word for the same line again (seed 000).
_PASTED_REPEAT = lazy_compile(r"(?P<prefix>[A-Za-z][\w-]{0,30}):\s.{0,200}?\(repeats\)\s*$")


def _repeats(record: Record, text: str) -> ev.Event | None:
    suppressed = _SUPPRESSED.search(text)
    if suppressed is not None:
        if "oom" in suppressed["fn"] or "out_of_memory" in suppressed["fn"]:
            return None  # a report's rate limit: LOST_MESSAGES
        return ev.Repeats(record, None, int(suppressed["count"]))
    pasted = _PASTED_REPEAT.search(text)
    return ev.Repeats(record, pasted["prefix"], 1) if pasted else None


REPEATS = MessageKind(
    "repeats",
    ("(repeats)", "callbacks suppressed"),
    _repeats,
    "the warning before (a paste's `(repeats)`) or after (a rate limit's count) came again",
    # The rate limit of warn_alloc (mm/page_alloc.c) before the allocation failure it lets through.
    "warn_alloc: 3 callbacks suppressed",
)
