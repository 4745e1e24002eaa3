"""Schedules: which loops run in which order, which may run in parallel, per statement."""
