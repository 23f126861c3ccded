"""bongard-agents: what is solved: problems, dataset loaders, downloads, rendering; results go to
`results`."""
