"""The ISA as data: loaders and models for the tables in the top-level ``isa/`` directory."""
