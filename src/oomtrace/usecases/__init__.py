"""One use case per command: each takes settled options (`Settings`) and returns what a format draws.

The click commands in `oomtrace.cli` only parse, hand over and map errors to exit codes. Below
the CLI, above the views (storyview, listview) and story/verdict; never imports `oomtrace.cli`.
"""
