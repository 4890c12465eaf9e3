"""What every handler runs on: the bus, services, the command's trip context, telemetry, the turn lease."""
