"""The practice engine: answer parsing and grading for every question kind, numeric drills over
model presets, and spaced-repetition scheduling (FSRS). Torch-free and textual-free."""
