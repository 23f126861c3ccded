"""bongard-agents: where every number comes from: the results store, and each rate, interval, count, table and
figure read from it."""
