"""oomtrace: kernel-log OOM forensics."""

__version__ = "0.1.0"
