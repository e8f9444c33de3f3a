"""Importers: other benchmarks' task trees read into this project's task format (tasks/README.md).

`icae_eval` imports an ICAE-EVAL tree (`icae tasks import icae-eval PATH`) and
`icae_export` writes imported tasks back to that tree's layout, byte for byte. The other
modules each do one part: where things are in the tree (`icae_layout`), reading one alias
(`icae_read`), finding records copied between tasks (`icae_copies`), the protocol a case runs
through (`icae_contract`), a task's files (`icae_task`), what the import kept of the source
(`icae_origin`), JSON as the source wrote it (`json_format`), task.toml's text (`toml_text`),
writing a folder so that a re-import changes nothing (`folder_sync`), the located problems
(`problems`); the commands that drive them are `icae_tui/cli/importers.py`. No Textual here,
and nothing here runs a box.
"""
