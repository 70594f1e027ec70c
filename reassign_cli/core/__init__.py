"""Pure core: Kafka's formats and rules (model, znodes, snapshot, validate, throttle, progress, record).
No I/O; imports only core and errors (numpy and orjson are fine)."""
