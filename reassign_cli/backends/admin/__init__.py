"""The Kafka admin-API edge (kafka-python's KafkaAdminClient)."""
