"""Command-line subcommands, one module each, imported lazily by inferview.cli."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from inferview.store import Store


@contextmanager
def open_store(*, backup: bool = True) -> Iterator[Store]:
    """The progress store for one command; a store that cannot be used (locked past the busy
    timeout, read-only, newer schema) ends the command with its one-line message and exit 1, and a
    notice (a damaged file moved aside) is printed on stderr."""
    from inferview.store import Store, StoreError

    try:
        store = Store.open(backup=backup)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if store.notice:
        click.echo(store.notice, err=True)
    try:
        yield store
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
