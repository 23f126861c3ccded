"""Built-in providers, one short module each; imported only when used."""
