"""The lab autograder: ``neuronemu grade LAB KERNEL.s`` (docs/labs/README.md)."""
