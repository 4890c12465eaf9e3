"""The TurnRunner agent loop and the tools it offers the model."""
