"""Rules as programs: the rule language, its evaluation over panel symbols, and the search for a rule."""
