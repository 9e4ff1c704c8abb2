"""orbitmq.store (see ARCHITECTURE.md)."""
