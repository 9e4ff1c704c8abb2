"""orbitmq.protocol (see ARCHITECTURE.md)."""
