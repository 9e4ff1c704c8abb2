"""orbitmq.spark (see ARCHITECTURE.md)."""
