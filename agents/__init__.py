"""Who answers: chat models and non-LLM agents behind one LangChain interface."""
