"""The broker's request processors, one module per concern; each exposes `register(server, app)`."""
