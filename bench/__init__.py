"""Benchmarks (``make bench``): run on loopback, bounded in count and time, report ratios."""
