"""orbitmq.namesrv (see ARCHITECTURE.md)."""
