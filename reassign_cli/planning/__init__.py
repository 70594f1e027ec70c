"""Pure planning: Kafka's assignment algorithm, the strategies (kafka, balanced) and partition sizes.
No I/O; imports only planning, core and errors."""
