"""ICAE-EVAL's evaluation protocol as an imported task's interface.

ICAE-EVAL runs a repository's `rcb_tests/test.sh --cases-dir DIR`, which must run each case
of `rcb_tests/DIR/*.json` through the repository's dispatcher (one JSON object on stdin) and
write that case's raw stdout to `rcb_tests/stdout/DIR/<stem>@<index>.txt`; it then reads
those files. An imported task is a `dispatcher` task whose tool, `icae-case`, runs one case
through that protocol (ADAPTER, installed into the task's images by its setup lines): the
case's JSON object becomes the only case of a cases folder, test.sh runs, and the captured
file is the case's stdout. The oracle side runs the golden repository's test.sh, the
delivery's side the agent's: the same protocol on both. test.sh's own output is not part of
it (ICAE never reads it): it is shown on stderr only when no output was captured, and then
stdout says so too, so a missing output never equals a stored one.

The agent learns the protocol from its PRD: CONTRACT closes every level's PRD (ICAE-EVAL
gives it in its harness prompt instead); an export takes it off again.
"""

from __future__ import annotations

ADAPTER_PATH = "/usr/local/lib/icae/run-case.sh"
TOOL = "icae-case"
# the one-case folder under rcb_tests/: ICAE-EVAL's default --cases-dir, the folder of the
# hidden cases it scores (it, too, replaces the folder with the cases it runs)
CASES_DIR = "test_cases"
TIMEOUT_S = 120.0  # a case: test.sh may build the project first, on every case

ADAPTER = f"""#!/bin/sh
# {TOOL} ROOT: one case through ICAE-EVAL's evaluation protocol (icae-tui's importer wrote
# this). The case's JSON object (stdin) is the only case of rcb_tests/{CASES_DIR}/case.json;
# `bash rcb_tests/test.sh --cases-dir {CASES_DIR}` runs in ROOT; what it captured,
# rcb_tests/stdout/{CASES_DIR}/case@N.txt (N: digits, any zero-padding), is this command's
# stdout. test.sh's own output is not: it is shown on stderr only when nothing was captured
# (then the exit status is 3).
root=${{1:?usage: {TOOL} ROOT}}
cd "$root" || exit 3
rm -rf rcb_tests/{CASES_DIR} rcb_tests/stdout/{CASES_DIR}
mkdir -p rcb_tests/{CASES_DIR} || exit 3
{{ printf '{{"description": "one case", "cases": [{{"input": '; cat; printf '}}]}}\\n'; }} \\
    > rcb_tests/{CASES_DIR}/case.json || exit 3
log=$(mktemp) || exit 3
bash rcb_tests/test.sh --cases-dir {CASES_DIR} </dev/null >"$log" 2>&1
for out in rcb_tests/stdout/{CASES_DIR}/case@*.txt; do
    index=${{out##*/case@}}
    case "${{index%.txt}}" in
        ''|*[!0-9]*) continue ;;  # as ICAE-EVAL reads them: <stem>@<digits>.txt
    esac
    if [ -f "$out" ]; then
        cat "$out"
        exit 0
    fi
done
echo "{TOOL}: no output captured (rcb_tests/stdout/{CASES_DIR}/case@NNN.txt)"
echo "{TOOL}: rcb_tests/test.sh captured no output for the case; its last lines:" >&2
tail -n 20 "$log" >&2
exit 3
"""

# the task's image setup: the adapter, before anything else
SETUP = [
    f"mkdir -p {ADAPTER_PATH.rsplit('/', 1)[0]} && cat > {ADAPTER_PATH} <<'ICAE_ADAPTER'\n"
    f"{ADAPTER}ICAE_ADAPTER\n",
    f"chmod 755 {ADAPTER_PATH}",
]
ORACLE_ENTRY = f"sh {ADAPTER_PATH} /opt/oracle"
DELIVERY_ENTRY = f"sh {ADAPTER_PATH} /workspace"
BUILD = (
    "test -f rcb_tests/test.sh || { echo 'no rcb_tests/test.sh: every case runs through it "
    "(ICAE-EVAL evaluation protocol)' >&2; exit 1; }"
)

CONTRACT = """

## How your delivery is run

Build the project in your workspace with a bash harness at `rcb_tests/test.sh`, as ICAE-EVAL
evaluates it: `bash rcb_tests/test.sh --cases-dir DIR` (run from the workspace) runs every
case of each `rcb_tests/DIR/*.json` file (`{"cases": [{"input": {...}}, ...]}`) through your
program, which reads the case's `input` as one JSON object on stdin, and writes that run's
raw stdout, and nothing else, to `rcb_tests/stdout/DIR/<file stem>@<case index, 3 digits>.txt`
(for example `rcb_tests/stdout/public_test_cases/feature1@000.txt`). Each case is run on its
own in a fresh copy of your workspace, without network.

Packages: your box has no network but this run's package registry, through which
`pip install` and `npm install` work as usual (a name this task does not allow is refused,
with a message saying so). test.sh runs later without network and can install only what
this run downloaded: declare the dependencies (requirements.txt, or package.json with its
package-lock.json) and install them from test.sh.
"""

# the contracts earlier imports appended, taken off an export's PRD as CONTRACT is
FORMER_CONTRACTS = (
    CONTRACT.split("without network.")[0] + "without network: whatever test.sh needs must "
    "already\nbe in the workspace or the image.\n",
)


def with_contract(prd: str) -> str:
    """The PRD an imported task gives: the tree's, then CONTRACT."""
    return prd + CONTRACT


def without_contract(prd: bytes) -> bytes:
    """The PRD as the tree had it (a PRD edited since the import: as it is now)."""
    for contract in (CONTRACT, *FORMER_CONTRACTS):
        suffix = contract.encode()
        if prd.endswith(suffix):
            return prd[: -len(suffix)]
    return prd
