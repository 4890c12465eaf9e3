"""The raw log: its commands and queries, the event feed, what a session cost."""
