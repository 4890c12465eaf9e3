"""A provider request's lifecycle: prepare_turn, record_usage, recover_overflow, /info."""
