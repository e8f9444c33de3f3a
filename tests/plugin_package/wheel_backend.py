"""A PEP 517 build backend of a few lines for the test plug-in package: a wheel of the
modules pyproject.toml names, with its entry points, built offline with nothing installed."""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).parent


def _project() -> tuple[dict, list[str]]:
    data = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"], data["tool"]["wheel_backend"]["modules"]


def _dist_files(project: dict) -> dict[str, str]:
    name = project["name"].replace("-", "_")
    info = f"{name}-{project['version']}.dist-info"
    entry_points = ""
    for group, entries in project.get("entry-points", {}).items():
        entry_points += f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items())
    return {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {project['name']}\n"
        f"Version: {project['version']}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: wheel_backend\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": entry_points,
    }


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    project, modules = _project()
    files = {m: (HERE / m).read_text(encoding="utf-8") for m in modules}
    files |= _dist_files(project)
    name = f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"
    record_name = next(k for k in files if k.endswith("/WHEEL")).replace("WHEEL", "RECORD")
    with zipfile.ZipFile(Path(wheel_directory) / name, "w") as wheel:
        record = ""
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record += f"{path},sha256={digest.decode()},{len(data)}\n"
            wheel.writestr(path, data)
        wheel.writestr(record_name, record + f"{record_name},,\n")
    return name
