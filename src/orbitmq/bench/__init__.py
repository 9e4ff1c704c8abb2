"""orbitmq.bench (see ARCHITECTURE.md)."""
