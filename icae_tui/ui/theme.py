"""The console's default colours."""

from __future__ import annotations

from textual.theme import Theme

ICAE_THEME = Theme(
    name="icae",
    primary="#5FA8D3",
    secondary="#7FB685",
    accent="#E9A03B",
    warning="#E9C46A",
    error="#E76F51",
    success="#7FB685",
    foreground="#D8DEE9",
    background="#11151C",
    surface="#171C24",
    panel="#1F2733",
    dark=True,
)
