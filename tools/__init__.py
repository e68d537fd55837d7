"""Developer tools (not installed): run from the repository root as
``python -m tools.<name>``; tests import them as ``tools.<name>``."""
