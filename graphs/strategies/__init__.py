"""The strategy families, one module per paper; each registers its strategies through the
`bongard_agents.strategies` entry points, as a plugin package does."""
