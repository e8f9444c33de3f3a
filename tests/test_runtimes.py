"""Language runtimes (icae_tui/domain/runtimes.py): a task's language, or its [image] runtime,
picks the Debian packages of its runtime layer; a language with no recipe is the task file's
error when the catalog loads it, naming the file and the field, and the other tasks still load.
Pure: no engine."""

from __future__ import annotations

import json

import pytest

from icae_tui.catalog import load_catalog
from icae_tui.domain.runtimes import (
    RECIPES,
    Runtime,
    known_languages,
    recipe_for,
    runtime_of,
    runtime_problem,
)
from icae_tui.domain.task import TaskSpec
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.sandbox.docker.images import BASE_IMAGE, apt_install_line, runtime_image_name
from tests.importers.icae_tree import build_tree, icae_json
from tests.task_copies import copy_mini, edit_toml


def spec(language: str = "python", **image: object) -> TaskSpec:
    return TaskSpec.model_validate({
        "id": "t", "title": "t", "language": language, "image": image,
        "interface": {"kind": "command", "tool": "t"},
        "oracle": {"entry": "t"}, "delivery": {"entry": "t", "build": "true"},
    })  # fmt: skip


def test_every_language_the_issue_names_has_a_recipe_of_debian_packages() -> None:
    wanted = {
        "javascript": {"nodejs"},
        "typescript": {"nodejs", "node-typescript"},
        "go": {"golang-go"},
        "rust": {"rustc", "cargo"},
        "java": {"default-jdk-headless"},
        "ruby": {"ruby"},
        "php": {"php-cli"},
        "c": {"gcc", "make"},
        "cpp": {"g++", "make"},
    }
    for language, packages in wanted.items():
        recipe = recipe_for(language)
        assert recipe is not None and packages <= set(recipe.packages), language
        assert recipe.probe
    assert recipe_for("python") == RECIPES["python"] and RECIPES["python"].empty


@pytest.mark.parametrize(
    ("spelling", "name"),
    [("JavaScript", "javascript"), ("node", "javascript"), ("Go", "go"), ("golang", "go"),
     ("C++", "cpp"), (" Python ", "python"), ("sh", "shell"), ("TypeScript", "typescript")],
)  # fmt: skip
def test_spellings_of_a_language_find_its_recipe(spelling: str, name: str) -> None:
    assert recipe_for(spelling) == RECIPES[name]


def test_the_debian_base_takes_the_runtime_from_the_language() -> None:
    assert runtime_of(spec("javascript")) == RECIPES["javascript"]
    assert runtime_of(spec("Go")) == RECIPES["go"]
    assert runtime_of(spec("python")) is None  # the base's own python3: no layer, no rebuild
    assert runtime_of(spec("sh")) is None
    assert runtime_of(spec("unknown")) is None  # an import that knows no language: the base
    assert runtime_problem(spec("Unknown")) is None


def test_an_explicit_runtime_and_packages() -> None:
    assert runtime_of(spec("python", runtime="rust")) == RECIPES["rust"]
    assert runtime_of(spec("javascript", runtime="none")) is None
    extra = runtime_of(spec("javascript", packages=["jq", "nodejs"]))
    assert extra == Runtime("javascript", ("nodejs", "jq"), RECIPES["javascript"].probe)
    only = runtime_of(spec("python", packages=["jq"]))
    assert only is not None and only.packages == ("jq",)
    with pytest.raises(ValueError, match="Debian package"):
        spec("python", packages=["jq; curl evil"])


def test_another_base_brings_its_own_runtime() -> None:
    assert runtime_of(spec("dart", base="dart:3.5")) is None
    assert runtime_problem(spec("dart", base="dart:3.5")) is None
    assert runtime_of(spec("anything", base="node:20", runtime="javascript")) is not None


def test_a_language_with_no_recipe_is_named_with_its_field() -> None:
    field, message = runtime_problem(spec("cobol")) or ("", "")
    assert field == "language"
    assert "'cobol'" in message and "cannot provide" in message
    assert all(name in message for name in known_languages())
    field, message = runtime_problem(spec("python", runtime="cobol")) or ("", "")
    assert field == "image.runtime" and "'cobol'" in message
    with pytest.raises(ValueError, match="field 'language'"):
        runtime_of(spec("cobol"))


def test_the_catalog_reports_an_unknown_language_and_loads_the_rest(tmp_path) -> None:
    folder = copy_mini(tmp_path)
    edit_toml(folder, 'language = "python"', 'language = "cobol"')
    catalog = load_catalog(folder.parent)
    assert catalog.tasks == {}
    [err] = catalog.errors
    assert err.path == folder / "task.toml"
    assert err.message.startswith("field 'language': no runtime recipe for language 'cobol'")


def test_runtime_image_names_are_by_base_and_packages() -> None:
    js = RECIPES["javascript"]
    name = runtime_image_name("sha256:base", js)
    assert name.startswith("icae-runtime:")
    assert name == runtime_image_name("sha256:base", Runtime("other", ("nodejs",), "x"))
    assert name != runtime_image_name("sha256:other", js)
    assert name != runtime_image_name("sha256:base", RECIPES["typescript"])
    line = apt_install_line(("rustc", "cargo"))
    assert "--no-install-recommends cargo rustc &&" in line
    assert line.endswith("rm -rf /var/lib/apt/lists/*")


def test_an_import_onto_the_debian_base_gets_its_runtime_or_says_it_cannot(tmp_path) -> None:
    """An ICAE-EVAL import onto icae-base:bookworm: a JavaScript task loads with the javascript
    runtime; a Dart one is reported by the import itself, naming the language, not left to
    fail a run."""
    tree = build_tree(tmp_path / "tree")
    aliases = json.loads((tree / "repo_alias.json").read_text())
    aliases["realcode@101"]["language"] = "JavaScript"
    aliases["realcode@102"]["language"] = "Dart"
    (tree / "repo_alias.json").write_text(icae_json(aliases))
    report = import_tree(tree, tmp_path / "tasks", base=BASE_IMAGE)
    by_alias = {t.alias: t for t in report.tasks}
    assert by_alias["realcode@101"].outcome is Outcome.CREATED
    task = load_catalog(tmp_path / "tasks").tasks["realcode-101"]
    assert runtime_of(task.spec) == RECIPES["javascript"]
    dart = by_alias["realcode@102"]
    assert dart.outcome is Outcome.FAILED
    said = " ".join(p.message for p in dart.problems)
    assert "no runtime recipe for language 'Dart'" in said
    assert "cannot provide it" in said
