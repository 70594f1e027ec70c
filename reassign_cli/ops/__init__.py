"""Sequencing, one module per command: the order of reads, writes and waits over a backends.protocol.Backend.
Imports core, planning, backends, spark and errors; never render or cli (no Click, no Rich)."""
