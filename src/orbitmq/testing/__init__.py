"""orbitmq.testing (see ARCHITECTURE.md)."""
