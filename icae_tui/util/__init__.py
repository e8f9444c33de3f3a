"""Small helpers every layer may use: text made safe to print, JSON and TOML read within bounds,
owners of leftover files, endpoint URLs, asyncio odds and ends. They import nothing of ours
but each other."""
