"""Helpers shared by the tests (process control, weight rule, fixtures data)."""
