"""The build gate's reason names the line that says what failed, not the last line of stderr
(issue 38, item 10): a Node crash ends with its version banner, a compiler with a summary,
a make with its `Error 1`. The whole output stays on the BuildChecked event, shown under the
build line in the run's trace. Pure: outputs written here, no engine."""

from __future__ import annotations

import pytest

from icae_tui.display import wording as w
from icae_tui.display.view import RunView
from icae_tui.domain.events import BuildChecked
from icae_tui.evaluation.gate import failed_build_reason

NODE = """\
/workspace/app.js:3
const const = 1;
      ^^^^^

SyntaxError: Unexpected token 'const'
    at internalCompileFunction (node:internal/vm:76:18)
    at wrapSafe (node:internal/modules/cjs/loader:1283:20)
    at Module._compile (node:internal/modules/cjs/loader:1328:27)

Node.js v18.20.4
"""

NODE_MODULE = """\
node:internal/modules/cjs/loader:1080
  throw err;
  ^

Error: Cannot find module 'express'
Require stack:
- /workspace/app.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/workspace/app.js' ]
}

Node.js v18.20.4
"""

PYTHON_CHAINED = """\
Traceback (most recent call last):
  File "/workspace/setup_db.py", line 4, in <module>
    conn = open_db()
KeyError: 'DB_PATH'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/workspace/setup_db.py", line 6, in <module>
    raise RuntimeError("no database configured")
RuntimeError: no database configured
"""

PYTHON_SYNTAX = """\
Traceback (most recent call last):
  File "/usr/lib/python3.11/py_compile.py", line 144, in compile
    code = loader.source_to_code(source_bytes, dfile or file,
  File "/workspace/semver.py", line 12
    def parse(text)
                   ^
SyntaxError: expected ':'
"""

RUST = """\
   Compiling calc v0.1.0 (/workspace)
warning: unused variable: `x`
 --> src/main.rs:2:9
error[E0425]: cannot find value `y` in this scope
 --> src/main.rs:3:20
error: could not compile `calc` (bin "calc") due to 1 previous error; 1 warning emitted
"""

GCC_MAKE = """\
main.c: In function 'main':
main.c:3:5: error: expected ';' before 'return'
make: *** [Makefile:2: all] Error 1
"""

RUBY = """\
/workspace/app.rb:1:in `<main>': undefined local variable or method `foo' for main:Object (NameError)
\tfrom /workspace/run.rb:2:in `require_relative'
\tfrom /workspace/run.rb:2:in `<main>'
"""


@pytest.mark.parametrize(
    ("err", "line"),
    [
        (NODE, "SyntaxError: Unexpected token 'const'"),
        (NODE_MODULE, "Error: Cannot find module 'express'"),
        (PYTHON_CHAINED, "RuntimeError: no database configured"),  # the final exception
        (PYTHON_SYNTAX, "SyntaxError: expected ':'"),
        (RUST, "error[E0425]: cannot find value `y` in this scope"),  # the first error
        (GCC_MAKE, "main.c:3:5: error: expected ';' before 'return'"),  # not make's trailer
        (RUBY, RUBY.split("\n")[0]),
        ("npm notice\nsomething went wrong\n\n", "something went wrong"),  # else the last
    ],
)
def test_the_reason_names_the_error_line(err, line):
    assert failed_build_reason(1, "", err) == f"build failed (exit 1): {line}"


def test_a_node_crash_is_not_reported_as_its_version_banner():
    assert "Node.js v18.20.4" not in failed_build_reason(1, "", NODE)


def test_an_empty_stderr_is_said_and_stdouts_line_given():
    assert failed_build_reason(2, "building…\nall 3 steps done\n", "") == (
        "build failed (exit 2), no output on stderr: all 3 steps done"
    )
    tsc = "src/a.ts(3,5): error TS2304: Cannot find name 'x'.\nFound 1 error.\n"
    assert failed_build_reason(2, tsc, " \n") == (
        "build failed (exit 2), no output on stderr: src/a.ts(3,5): error TS2304: Cannot "
        "find name 'x'."
    )
    assert failed_build_reason(2, "", "") == "build failed (exit 2): no output"


def test_the_build_line_and_the_trace_keep_the_whole_output():
    ev = BuildChecked(ok=False, exit_code=1, reason=failed_build_reason(1, "", NODE),
                      stdout="> node app.js\n", stderr=NODE)  # fmt: skip
    assert w.build_line(ev) == "build FAILED (exit 1): SyntaxError: Unexpected token 'const'"
    view = RunView()
    view.apply(ev)
    lines, _ = view.trace_since(0)
    texts = [line.text for line in lines]
    assert texts[0] == w.build_line(ev)
    shown = "\n".join(texts[1:])
    for kept in ("> node app.js", "/workspace/app.js:3", "at wrapSafe", "Node.js v18.20.4"):
        assert kept in shown  # every line of both streams, under the build line
