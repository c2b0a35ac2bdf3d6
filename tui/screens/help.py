"""The help screen: every key, screen by screen (opened with ``?``, or F1 inside a text box)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown

HELP_TEXT = """\
# Keys

Everything works from the keyboard. **Escape** goes back, **ctrl+q** quits, **?** opens this
help (**F1** while typing in a text box, where `?` is just a character). The footer always shows
the keys of the current screen.

## Home
| key | does |
|---|---|
| **p** | practise: reviews due in every topic, then new questions |
| **enter** | practise the highlighted topic |
| **c** | coding challenges |
| **k** | KV-cache and weight-memory calculator |
| **s** | statistics |
| **e** | content skipped because of errors (when there is any) |

## Practice
| key | does |
|---|---|
| **ctrl+s** | submit the answer (**enter** in a number box) |
| **enter** or **space** | on a key point: toggle hit/missed when the grader got it wrong; on a flagged misconception: dismiss it |
| **1 2 3 4** | rate yourself: Again, Hard, Good, Easy — schedules the next review |
| **f** | ask the follow-up questions next |
| **ctrl+n** | skip this question |

Numbers take units: `40 GiB`, `42.9 GB`, `4.29e10 bytes`, `320 KiB/token`.

## Challenges
| key | does |
|---|---|
| **enter** | open the highlighted challenge |
| **ctrl+r** | save and grade (runs in the background; **escape** or **ctrl+c** cancels) |
| **ctrl+s** | save the editor to the workspace file |
| **ctrl+g** | reveal the next hint |
| **ctrl+o** | open the file in `$VISUAL` / `$EDITOR`, then reload it |
| **ctrl+l** | reveal the reference solution (after a first attempt) |
| **ctrl+t** | switch the left pane: statement, results, hints |
| **F2** | layout: side by side, the left pane alone, the editor alone |

Your solution lives in the workspace folder (shown in the title bar), so any editor works: the
screen notices when the file changes on disk and asks before replacing unsaved edits.

## Calculator
Pick a model preset (or type the path of a Hugging Face `config.json`), a dtype, batch, context
length and GPU. Every number comes from the same reference estimators the drills are graded with.
"""


class HelpScreen(Screen[None]):
    """Keys and how each screen works."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help-body"):
            yield Markdown(HELP_TEXT)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Help"
        self.query_one("#help-body").focus()
