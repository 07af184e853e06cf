"""Figures, one module per study."""
