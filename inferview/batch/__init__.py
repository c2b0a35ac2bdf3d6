"""Grading a cohort: every submission in a folder, each graded as ``inferview grade`` grades it.

``discover`` turns a folder into :class:`~inferview.batch.discover.Submission` objects, ``local``
grades them on a process pool on this machine, ``cluster`` as Ray tasks on an existing cluster,
``task`` is the one grading function both run, and ``table`` is the typed report (rows, sorting,
CSV, JSON, the terminal table). Nothing here imports torch or ray at import time.
"""
