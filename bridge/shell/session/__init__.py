"""The session: a core, its driver and clock, and the two sides it is given."""
