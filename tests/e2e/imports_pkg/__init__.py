"""A package for capture_imports.py: its functions import from it with
relative imports inside their bodies."""
SCALE = 2.0
