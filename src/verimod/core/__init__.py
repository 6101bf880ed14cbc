"""What every protocol shares: errors, registries, run store, cache, engine."""
