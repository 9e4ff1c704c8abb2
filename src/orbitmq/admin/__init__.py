"""orbitmq.admin (see ARCHITECTURE.md)."""
