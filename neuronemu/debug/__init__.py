"""The step debugger: ``neuronemu debug`` (a gdb-like prompt, repl.py), ``neuronemu dap`` (the
Debug Adapter Protocol, dap.py), both on ``session.Debugger`` over ``machine.Machine`` (one
core's run with break flags, checkpoints and replay). docs/debugging.md."""
