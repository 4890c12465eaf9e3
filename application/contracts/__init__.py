"""What the application exchanges with callers and adapters: commands, results, views, ports, settings."""
