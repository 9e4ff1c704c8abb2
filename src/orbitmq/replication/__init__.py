"""orbitmq.replication (see ARCHITECTURE.md)."""
