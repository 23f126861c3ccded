"""Human studies: people solving the problems a model is given, stored and compared like model runs."""
