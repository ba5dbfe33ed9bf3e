"""Inputs: each source only reads and yields records."""
