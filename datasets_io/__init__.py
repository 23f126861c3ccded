"""What is solved and where results go: problems, dataset loaders, rendering."""
