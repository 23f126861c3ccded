"""The Ray pools: runs and generations spread over actors, with the limiter and cache they share.

Not `ray/`: that name would shadow the package. Ray is the optional `ray` extra, imported here only."""
