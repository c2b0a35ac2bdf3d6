"""Where inferview keeps its files: the platform data folder, or ``$INFERVIEW_HOME`` when set."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
"""The ``inferview`` core package folder."""


def data_dir() -> Path:
    """The user's data folder (created if missing): progress store, backups, workspace, own content."""
    override = os.environ.get("INFERVIEW_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("inferview", appauthor=False))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(f"the data folder {path} is a file, not a folder"
                                 + (" (see INFERVIEW_HOME)" if override else "")) from None
    except OSError as exc:
        raise OSError(f"the data folder {path} cannot be made: {exc.strerror or exc}") from None
    return path


def store_path() -> Path:
    """The SQLite progress store."""
    return data_dir() / "progress.sqlite3"


def backups_dir() -> Path:
    """Backups of the progress store, the last few kept."""
    return data_dir() / "backups"


def workspace_dir() -> Path:
    """Where ``inferview start`` puts solution files: ``<workspace>/<challenge-id>/solution.py``."""
    return data_dir() / "workspace"


def kernel_cache_dir() -> Path:
    """Triton's compiled kernels for graded submissions on a GPU, kept between gradings so that a
    re-grade does not recompile every kernel variant (the interpreter on a CPU compiles nothing)."""
    return data_dir() / "cache" / "triton"


def user_questions_dir() -> Path:
    """The user's own question banks (``*.yaml``), loaded beside the built-in ones."""
    return data_dir() / "questions"


def user_challenges_dir() -> Path:
    """The user's own challenges (one folder each), loaded beside the built-in ones."""
    return data_dir() / "challenges"


def builtin_questions_dir() -> Path:
    """The built-in question banks."""
    import inferview.questions as q

    return Path(q.__file__).resolve().parent


def builtin_challenges_dir() -> Path:
    """The built-in challenges."""
    import inferview.challenges as c

    return Path(c.__file__).resolve().parent
