"""What is made of a run's events: the report (`report`, its formats in `formats/`), the
trajectory (ATIF), the agent's claims read against the score, a stored run's summary,
comparison and rescoring, and the statistics of repeated runs."""
