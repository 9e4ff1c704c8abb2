"""The broker's background services (long-running async loops owned and cancelled by BrokerApp)."""
