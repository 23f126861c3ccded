"""bongard-agents: who answers: chat models and non-LLM agents behind one LangChain interface."""
