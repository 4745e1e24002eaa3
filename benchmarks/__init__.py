"""Benchmarks: each prints ratios or timings measured side by side in one run."""
