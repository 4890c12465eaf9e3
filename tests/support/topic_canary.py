"""Imported by nothing: a stored topic naming this module must never load it (issue 13)."""

IMPORTED = True
