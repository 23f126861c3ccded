"""What is read out of stored runs: the papers' analyses and the inspect_ai export."""
