"""Loaders and validators for the inputs cfbench accepts."""
