"""Entry point for `python -m oomtrace`."""

from oomtrace.cli import main

main()
