"""orbitmq.client (see ARCHITECTURE.md)."""
