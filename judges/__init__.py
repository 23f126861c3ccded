"""bongard-agents: was it right: verdicts, voting ensembles, text metrics and agreement statistics."""
