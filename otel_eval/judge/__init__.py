"""judge."""
