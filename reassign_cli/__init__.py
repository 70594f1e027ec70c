"""reassign_cli: move Kafka partition replicas between brokers safely (ZooKeeper-mode clusters)."""

__version__ = "0.1.0"
