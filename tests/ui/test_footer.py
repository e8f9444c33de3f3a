"""The key footer (icae_tui/ui/widgets/footer.py): Textual's, less the keys each recompose
left alive (Textualize/textual#6666), changed in place when the same keys are shown, and
fitted to its width (the most important keys, then a way to the rest)."""

from __future__ import annotations

import gc

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from icae_tui.ui.widgets.footer import MORE, WATCHERS, Footer, FooterKey, KeyPlan, fit

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


class Ranked(Screen[None]):
    """Five keys, two of them the screen's most important (FOOTER_FIRST), and the app's help
    key (not shown in the footer) and quit."""

    FOOTER_FIRST = ("fifth", "third")
    BINDINGS = [
        Binding("a", "first", "First key"),
        Binding("b", "second", "Second key"),
        Binding("c", "third", "Third key"),
        Binding("d", "fourth", "Fourth key"),
        Binding("e", "fifth('x')", "Fifth key"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("keys")
        yield Footer()


class Narrow(App[None]):
    BINDINGS = [
        Binding("question_mark", "help", "Help (keys)", show=False),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    SCREEN: type[Screen[None]] = Ranked

    def on_mount(self) -> None:
        self.push_screen(self.SCREEN())

    def action_help(self) -> None:
        pass


def keys_fit(footer: Footer) -> None:
    """Every key whole, left of the palette's."""
    keys = list(footer.query(FooterKey))
    palette = [k for k in keys if k.has_class("-command-palette")]
    rest = [k for k in keys if not k.has_class("-command-palette")]
    assert max(k.region.right for k in rest) <= palette[0].region.x, footer.shown_keys


async def test_a_narrow_footer_shows_the_most_important_keys_and_a_way_to_the_rest():
    app = Narrow()
    async with app.run_test(size=(70, 5)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        await pilot.pause()
        # in their order, the screen's first ones kept, then as many as fit; help, palette
        assert footer.shown_keys == ["a First key", "c Third key", "e Fifth key", f"? {MORE}",
                                     "^p palette"], footer.shown_keys  # fmt: skip
        keys_fit(footer)
        await pilot.press("question_mark")  # the help key is the app's: it works

        await pilot.resize_terminal(140, 5)  # wide: every key, no help key
        await pilot.pause()
        await pilot.pause()
        assert footer.shown_keys == ["a First key", "b Second key", "c Third key",
                                     "d Fourth key", "e Fifth key", "^q Quit", "^p palette"]  # fmt: skip
        keys_fit(footer)

        await pilot.resize_terminal(40, 5)  # narrower still: the first ones only
        await pilot.pause()
        await pilot.pause()
        assert footer.shown_keys == ["e Fifth key", f"? {MORE}", "^p palette"], footer.shown_keys
        keys_fit(footer)


def test_fit_keeps_the_best_ranked_keys_in_their_order():
    def key(name: str) -> tuple:
        return (name, (name, f"{name} does", name, True, ""))

    plan = KeyPlan(
        keys=((key("a"), 2), (key("b"), 0), (key("c"), 1)), more=key("?"), palette=key("p")
    )
    assert [k for k, _ in fit(plan, 200)] == ["a", "b", "c", "p"]
    # each key: 1 + 6 + 3 cells; the palette 12
    assert [k for k, _ in fit(plan, 12 + 30)] == ["a", "b", "c", "p"]
    assert [k for k, _ in fit(plan, 12 + 29)] == ["b", "?", "p"]  # the help key takes 10
    assert [k for k, _ in fit(plan, 12 + 19)] == ["?", "p"]
    assert [k for k, _ in fit(KeyPlan(plan.keys, None, plan.palette), 12)] == ["a", "b", "c", "p"]


class Grouping(Screen[None]):
    """A group of two keys (as the replay's ←→ Seek) among plain ones."""

    BINDINGS = [
        Binding("left", "seek(-1)", "Back", group=Binding.Group("Seek", compact=True)),
        Binding("right", "seek(1)", "On", group=Binding.Group("Seek", compact=True)),
        Binding("a", "first", "First key"),
        Binding("b", "second", "Second key"),
        Binding("c", "third", "Third key"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("keys")
        yield Footer()


class NarrowGrouped(Narrow):
    SCREEN = Grouping


async def test_a_narrow_footer_fits_grouped_keys_too():
    app = NarrowGrouped()
    async with app.run_test(size=(60, 5)) as pilot:
        await pilot.pause()
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        # the best ranked first, then any that still fit (b and c do not, quit does)
        assert footer.shown_keys == ["←→ Seek", "a First key", "^q Quit", f"? {MORE}",
                                     "^p palette"], footer.shown_keys  # fmt: skip
        keys_fit(footer)
        await pilot.resize_terminal(120, 5)
        await pilot.pause()
        await pilot.pause()
        assert footer.shown_keys == ["←→ Seek", "a First key", "b Second key", "c Third key",
                                     "^q Quit", "^p palette"], footer.shown_keys  # fmt: skip
        keys_fit(footer)
