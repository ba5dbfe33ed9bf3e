"""`oomtrace watch`: follow the kernel log live, warn before a kill, tell its story when it comes."""
