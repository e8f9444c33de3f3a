"""A run: its typed configuration (`config`, all a display needs to name one), the orchestrator
(`run`), its event log (`log`: numbered, stored, shown, report written), the per-run socket
folders dead runs left (`socket_folders`), and the console's live runs with their kept
delivery (`kept`)."""
