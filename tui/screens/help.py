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
| **m** | mock interview |
| **n** | do what the "Next:" line suggests |
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

Numbers take units: `9.87 TiB`, `10.9 TB`, `1.09e13 bytes`, `4.5 KiB/token`.

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
| **shift+tab** | move out of the editor (**tab** indents inside it) |
| **escape** | back; unsaved edits are saved first (the footer then reads "Save+back") |

Your solution lives in the workspace folder (shown in the title bar), so any editor works: the
screen notices when the file changes on disk and asks before replacing unsaved edits.

## Mock interview
Choose a length (30 minutes at first, then the last one you chose) and, if you like, a topic to
dwell on. Questions come in an interviewer's order, with follow-ups and one coding challenge; no
answers are shown until the report at the end.

| key | does |
|---|---|
| **ctrl+n** | hand in the answer and go on |
| **ctrl+k** | skip the question |
| **ctrl+o** | open the coding challenge's editor (no hints or solution during the interview) |
| **ctrl+p** | pause: the clock stops until you resume |
| **escape** | pause and leave; resume it later from the mock-interview hub |
| **ctrl+e** | end now and see the report |

The clock runs as it would in a real interview: while you write code, and while the "End
interview?" question is open (if time runs out there, the interview ends). Only pausing stops it,
and quitting the app pauses it. The report (**ctrl+s** saves it as Markdown) lists the score per
topic, the time per item, the key points missed and the challenge's verdict.

## Stats
Reviews and accuracy over time per topic, and the challenge history; **t** moves to the next tab.

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
