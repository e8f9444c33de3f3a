"""Language runtimes (icae_tui/domain/runtimes.py): a task's language, or its [image] runtime,
picks the Debian release and packages of its runtime layer; every language of ICAE-EVAL's
twelve is a recipe at or above the benchmark's version or a refusal naming what to supply; a
language with no recipe is the task file's error when the catalog loads it, naming the file
and the field, and the other tasks still load. Pure: no engine."""

from __future__ import annotations

import json

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.runtimes import (
    DEBIAN_BASE,
    ICAE_LANGUAGES,
    RECIPES,
    REFUSALS,
    REFUSED_KEY,
    Release,
    Runtime,
    canonical,
    image_plan,
    known_languages,
    meets,
    parse_version,
    parse_version_line,
    recipe_for,
    refusal_for,
    runtime_key,
    runtime_of,
    runtime_problem,
    runtime_refusal,
    version_line,
    version_text,
)
from icae_tui.domain.task import TaskSpec
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.importers.icae_layout import LANGUAGE_IMAGES
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
        "python": {"python3", "python3-pip", "python3-venv"},  # agents install the normal way
        "javascript": {"nodejs", "npm"},
        "typescript": {"nodejs", "npm", "node-typescript"},
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
        # python stays on bookworm's 3.11 (ICAE-EVAL's python:3.11; Aider needs < 3.13)
        wanted_release = Release.BOOKWORM if language == "python" else Release.TRIXIE
        assert recipe.probe and recipe.release is wanted_release, language
    assert RECIPES["shell"].empty


def test_every_icae_language_is_a_recipe_at_its_version_or_a_refusal() -> None:
    """ICAE-EVAL's twelve languages, as its importer names their images: each a recipe whose
    stated version meets the image's, or a refusal that names the image to supply."""
    assert {canonical(label) for label in LANGUAGE_IMAGES} == set(ICAE_LANGUAGES)
    for label, image in LANGUAGE_IMAGES.items():
        tag = image.rsplit(":", 1)[1]  # python:3.11 → 3.11, gcc:12 → 12
        recipe, refused = recipe_for(label), refusal_for(label)
        assert (recipe is None) != (refused is None), label
        if recipe is not None:
            assert recipe.benchmark == tag, label
            assert recipe.version and meets(recipe.version, recipe.benchmark), label
        else:
            assert refused is not None and refused.benchmark == tag and refused.image == image
            message = refused.message()
            assert image in message and "docker load" in message and "[image] base" in message
    assert sorted(REFUSALS) == ["csharp", "dart", "kotlin"]


@pytest.mark.parametrize(
    ("output", "version"),
    [("v20.19.2\n9.2.0\n", "20.19.2"), ("go version go1.24.4 linux/amd64", "1.24.4"),
     ("ruby 3.3.8 (2025-04-09 revision b200bad6cd) [x86_64-linux-gnu]", "3.3.8"),
     ("Python 3.13.5", "3.13.5"), ("javac 21.0.9", "21.0.9"), ("14.2.0\nGNU Make 4.4.1", "14.2.0"),
     ("no digits", "")],
)  # fmt: skip
def test_a_probes_version_and_whether_it_meets_the_benchmarks(output: str, version: str) -> None:
    assert parse_version(output) == version


def test_versions_compare_by_number() -> None:
    assert meets("3.3.8", "3.2") and meets("20.19.2", "20") and meets("1.85.1", "1.81")
    assert not meets("3.1.2", "3.2") and not meets("18.19.0", "20") and not meets("", "1")
    assert meets("3.10", "3.9")  # not as text


def test_a_runtime_version_is_said_in_a_line_the_report_reads_back() -> None:
    line = version_line("icae-base:trixie", RECIPES["ruby"], "3.3.8")
    assert line == "runtime version: ruby 3.3.8 (icae-base:trixie + ruby)"
    assert parse_version_line(line) == ("ruby", "3.3.8")
    assert parse_version_line("runtime ruby ready: icae-runtime:abc") is None


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
    assert runtime_of(spec("python")) == RECIPES["python"]  # pip and venv: a layer
    assert runtime_of(spec("sh")) is None
    assert runtime_of(spec("unknown")) is None  # an import that knows no language: the base
    assert runtime_problem(spec("Unknown")) is None


def test_a_recipe_on_the_default_base_is_built_on_its_release() -> None:
    """The default base (bookworm) with a recipe: the recipe's release (trixie); another
    Debian base named: that one; no recipe: the base as named."""
    trixie = Release.TRIXIE.base
    assert image_plan(spec("ruby")).base == trixie
    assert image_plan(spec("sh")).base == trixie  # an empty recipe: the release's base as is
    assert image_plan(spec("ruby", base=trixie)).base == trixie
    assert image_plan(spec("unknown")).base == DEBIAN_BASE
    assert image_plan(spec("unknown", packages=["jq"])).base == DEBIAN_BASE
    assert image_plan(spec("dart", base="dart:3.5")) == image_plan(spec("x", base="dart:3.5"))
    assert runtime_key(spec("ruby")) == "icae-base:trixie + ruby"
    assert runtime_key(spec("sh")) == "" and runtime_key(spec("kotlin")) == REFUSED_KEY


def test_a_listing_states_the_version_the_engine_has_or_why_not() -> None:
    built = {"icae-base:trixie + ruby": "3.3.8"}
    assert version_text("icae-base:trixie + ruby", built) == "3.3.8"
    assert version_text("icae-base:trixie + golang-go", built) == "not built yet"
    assert version_text("icae-base:trixie + ruby", None) == "unknown (no engine)"
    assert version_text(REFUSED_KEY, built) == "not provided here"
    assert version_text("", built) == "as its base image has it"


def test_an_explicit_runtime_and_packages() -> None:
    assert runtime_of(spec("python", runtime="rust")) == RECIPES["rust"]
    assert runtime_of(spec("javascript", runtime="none")) is None
    extra = runtime_of(spec("javascript", packages=["jq", "nodejs"]))
    js = RECIPES["javascript"]
    assert extra is not None and extra.packages == ("nodejs", "npm", "jq")
    assert (extra.name, extra.probe, extra.release) == (js.name, js.probe, js.release)
    only = runtime_of(spec("unknown", packages=["jq"]))
    assert only is not None and only.packages == ("jq",) and only.release is Release.BOOKWORM
    with pytest.raises(ValueError, match="Debian package"):
        spec("python", packages=["jq; curl evil"])


def test_another_base_brings_its_own_runtime() -> None:
    assert runtime_of(spec("dart", base="dart:3.5")) is None
    assert runtime_problem(spec("dart", base="dart:3.5")) is None
    assert runtime_of(spec("anything", base="node:20", runtime="javascript")) is not None


def test_a_refused_language_loads_but_its_image_cannot_be_had() -> None:
    for language in ("Dart", "kotlin", "C#"):
        assert runtime_problem(spec(language)) is None  # the catalog loads it
        field, message = runtime_refusal(spec(language)) or ("", "")
        assert field == "language" and "is not provided here" in message
        with pytest.raises(ValueError, match="field 'language': language"):
            image_plan(spec(language))
    assert runtime_refusal(spec("kotlin", base="kotlin:1.9.25")) is None  # supplied
    assert runtime_refusal(spec("python", runtime="dart"))[0] == "image.runtime"  # type: ignore[index]


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
    assert name == runtime_image_name("sha256:base", Runtime("other", ("npm", "nodejs"), "x"))
    assert name != runtime_image_name("sha256:other", js)
    assert name != runtime_image_name("sha256:base", RECIPES["typescript"])
    line = apt_install_line(("rustc", "cargo"))
    assert "--no-install-recommends cargo rustc &&" in line
    assert line.endswith("rm -rf /var/lib/apt/lists/*")


def test_an_import_onto_the_debian_base_gets_its_runtime_or_says_it_cannot(tmp_path) -> None:
    """An ICAE-EVAL import onto the Debian base: a JavaScript task loads with the javascript
    runtime; a Dart one is imported with a warning naming what to supply, not left to fail a
    run unannounced."""
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
    assert dart.outcome is Outcome.CREATED
    said = " ".join(p.message for p in dart.problems)
    assert "language dart (3.5 in ICAE-EVAL) is not provided here" in said
    assert "docker load -i FILE.tar` an image such as dart:3.5" in said
