"""Building blocks several strategy families share: conversations turn by turn, describe-then-answer,
test-image queries and the sides of a problem."""
