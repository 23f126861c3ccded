"""How a problem is solved: LangGraph strategies, the dataset runner and the CLI."""
