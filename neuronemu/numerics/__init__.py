"""Data types and the conversions between them (see docs/numerics.md)."""
