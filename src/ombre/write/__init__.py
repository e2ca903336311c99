"""The write path: commitment arbitration and the model behind it."""
