"""The providers' batch APIs as `agents.batching` speaks them: one module per protocol (OpenAI's
Files and Batches, Anthropic's Message Batches, Gemini's Batch Mode), each a `BatchProtocol`."""
