"""Mistake: never looks at the samples and always returns 1.0, so no wrong step is detected."""


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    return 1.0
