"""Internals of the ``helm`` test double (see ../README.md). Never used outside tests."""
