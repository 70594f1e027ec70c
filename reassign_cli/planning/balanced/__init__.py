"""The balanced strategy (docs/balanced.md): per-broker targets, replica moves, leaders, shared state.
Pure; imports only planning, core and errors."""
