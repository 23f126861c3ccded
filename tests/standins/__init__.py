"""Local HTTP servers on 127.0.0.1 that speak real provider wire protocols, for tests."""
