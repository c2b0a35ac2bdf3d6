"""The ``inferview`` command line: ``inferview`` alone opens the TUI; subcommands are scriptable.

Subcommands live one per module in ``inferview.commands`` and are imported only when used, so
``inferview --help`` and the TUI start-up never import torch. Any error ends in one clear line on
stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

from inferview import __version__

# name -> (module in inferview.commands, short help shown by --help without importing it)
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("list_cmd", "List challenges and question banks."),
    "lint": ("lint", "Validate question banks and challenges."),
    "stats": ("stats", "Show progress: reviews, accuracy, challenges, mock interviews."),
    "calc": ("calc", "KV-cache and weight-memory calculator over model presets."),
    "grade": ("grade", "Grade a solution file headless."),
    "grade-batch": ("grade_batch", "Grade a cohort's submissions, locally or on a Ray cluster."),
    "answer": ("answer", "Grade a free-text answer to an open question headless."),
    "start": ("start", "Copy a challenge's starter into the workspace and print its path."),
    "watch": ("watch", "Re-grade a solution every time it is saved."),
    "challenge": ("challenge", "Open the TUI on one challenge."),
    "mock": ("mock", "Start a timed mock interview."),
    "report": ("report", "Show or export a mock-interview report."),
    "bench": ("bench", "Benchmark the reference kernels on the present device."),
    "doctor": ("doctor", "Show the grading machine's set-up (--remote HOST: check a remote)."),
    "serve": ("serve", "Serve the app in a web page (loopback; --public for other hosts)."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(f"inferview.commands.{entry[0]}")
        return module.command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(__version__, prog_name="inferview")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Practise LLM-inference engineering interviews: concept cards, numeric drills, graded coding
    challenges and timed mock interviews. Run without a command to open the app."""
    if ctx.invoked_subcommand is None:
        from inferview.tui.app import run_app

        run_app()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``inferview`` script."""
    try:
        cli.main(args=argv, prog_name="inferview", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("inferview: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        click.echo(f"inferview: {exc.format_message()}", err=True)
        if exc.ctx is not None:
            click.echo(f"Try '{exc.ctx.command_path} --help'.", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"inferview: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("inferview: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except OSError as exc:  # a file or folder the user can fix: its message names it
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - the promise is one clear line, never a traceback
        click.echo(f"inferview: error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
