"""What runs keep: the SQLite store of runs and events with their artifacts folders
(`database`), how much one run may store (`bounds`), a damaged store file named in one line
(`damage`)."""
