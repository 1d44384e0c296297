"""Generic runtime helpers private to otel_eval: daemon threads, deadlines, fork handling, log filters.

The bottom layer: it imports nothing of otel_eval but ``errors``.
"""
