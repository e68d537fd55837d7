"""Files generated from isa/ by tools/gen_isa.py; do not edit."""
