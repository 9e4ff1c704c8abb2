"""orbitmq.transport (see ARCHITECTURE.md)."""
