"""Was it right: verdicts, voting ensembles, text metrics and agreement statistics."""
