"""Grading on another machine over SSH, through the system's OpenSSH client.

:mod:`~inferview.remote.config` says where (``--remote HOST`` or ``INFERVIEW_REMOTE``),
:mod:`~inferview.remote.ssh` runs ``ssh`` and words its failures, :mod:`~inferview.remote.backend`
is the :class:`~inferview.submit.Backend` that grades there, and :mod:`~inferview.remote.serve` is
the remote side of ``inferview grade``. Torch-free.
"""
