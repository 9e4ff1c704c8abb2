"""orbitmq.broker (see ARCHITECTURE.md)."""
