"""Edges: the Backend protocol (protocol.py, pure) and its implementations over ZooKeeper (kazoo) and the
Kafka admin API (kafka-python). Imports core, planning and errors; never ops, render or cli."""
