"""orbitmq.controller: RocketMQ 5's controller mode (RIP-44) (see ARCHITECTURE.md)."""
