"""What one process keeps in memory between commands: the context cache, turn state, calibration, drafts, background threads."""
