"""Mistake (cheating): instead of testing what ``step`` emits, it reads the step's name, globals and
source looking for the word "correct". The grader hands every step over anonymously (named
``step``, no source on disk, no sibling functions in its globals), so this learns nothing and
rejects the correct step."""

import inspect


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    clues = [step.__name__, step.__qualname__, step.__code__.co_name, *step.__globals__]
    try:
        clues.append(inspect.getsource(step))
    except (OSError, TypeError):
        pass
    return 1.0 if any("correct" in c for c in clues) else 0.0
