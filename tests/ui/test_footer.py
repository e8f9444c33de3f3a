"""The key footer (icae_tui/ui/widgets/footer.py): Textual's, less the keys each recompose
left alive (Textualize/textual#6666), and changed in place when the same keys are shown."""

from __future__ import annotations

import gc

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from icae_tui.ui.widgets.footer import WATCHERS, Footer

MODES = ("one", "two", "three")


class Keys(App[None]):
    """m cycles the modes; only the binding for the next one lives (as the run screen's)."""

    BINDINGS = [
        Binding("a", "noop", "Always"),
        *(Binding("m", f"cycle('{mode}')", f"Mode ▸ {mode}") for mode in MODES),
        Binding("x", "extra", "Extra"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.mode = MODES[0]
        self.extra = False

    def compose(self) -> ComposeResult:
        yield Static("keys")
        yield Footer()

    def next_mode(self) -> str:
        return MODES[(MODES.index(self.mode) + 1) % len(MODES)]

    def action_cycle(self, mode: str) -> None:
        self.mode = mode
        self.refresh_bindings()

    def action_noop(self) -> None:
        pass

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle":
            return parameters[0] == self.next_mode()
        if action == "extra":
            return self.extra
        return True


def shown(footer: Footer) -> list[str]:
    return [f"{key.key} {key.description}" for key in footer.query(FooterKey)]


async def test_a_changed_description_changes_the_keys_in_place():
    app = Keys()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        assert shown(footer)[:2] == ["a Always", "m Mode ▸ two"]
        keys = list(footer.query(FooterKey))
        for expected in ("three", "one", "two"):
            await pilot.press("m")
            await pilot.pause()
            assert shown(footer)[:2] == ["a Always", f"m Mode ▸ {expected}"]
        assert list(footer.query(FooterKey)) == keys  # the same widgets: nothing mounted
        m = keys[1]
        assert m.action == "cycle('two')" and "Mode ▸ two" in str(m.render())

        app.extra = True  # another key shown: composed again
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert shown(footer)[:3] == ["a Always", "m Mode ▸ two", "x Extra"]
        assert list(footer.query(FooterKey))[0] is not keys[0]


async def test_recomposing_leaves_no_keys_behind():
    app = Keys()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        gc.collect()
        # Keys of other apps (earlier tests in this process) may still be alive: held here so
        # their ids stay theirs, and left out of the count.
        mine = {id(key) for key in footer.query(FooterKey)}
        others = [o for o in gc.get_objects() if isinstance(o, FooterKey) and id(o) not in mine]
        for i in range(20):  # the keys shown change each time: composed again
            app.extra = not app.extra
            app.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
            assert ("x Extra" in shown(footer)) is app.extra, i
        keys = list(footer.query(FooterKey))
        watchers = getattr(footer, WATCHERS)["compact"]
        assert {id(node) for node, _ in watchers} <= {id(key) for key in keys}
        del watchers
        gc.collect()
        known = {id(o) for o in others}
        alive = [o for o in gc.get_objects() if isinstance(o, FooterKey) and id(o) not in known]
        assert len(alive) == len(keys)
