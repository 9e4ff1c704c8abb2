"""orbitmq.message (see ARCHITECTURE.md)."""
