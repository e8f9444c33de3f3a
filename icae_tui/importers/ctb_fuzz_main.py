"""The program that runs a CLI-Tool-Bench fuzzer inside a box (never imported here: its text
is copied into the box as FUZZ_MAIN). It seeds `random` (PYTHONHASHSEED is set by the
caller) before the tool's start.py is imported, stubs DiffTestEngine (the benchmark's
runner, which needs docker), records what the adapter's install_oracle would run instead of
running it, and writes one JSON object to its stdout: base_image, install, cases, and
sanitizes (whether the adapter overrides BaseRepoAdapter.sanitize_stdout, which masks parts
of the output before CLI-Tool-Bench compares it). Anything the fuzzer prints goes to stderr.
"""

# Both programs' shared part: stdout kept for the answer (what the adapter prints goes to
# stderr), the tree's modules importable, DiffTestEngine stubbed, start.py's one adapter made.
LOAD_ADAPTER = r"""
out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(start)))))
sys.path.insert(0, os.path.dirname(start))  # its own folder first, as `python start.py` has it
stub = types.ModuleType("DiffTestEngine")
class DiffTestEngine:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("DiffTestEngine does not run here")
stub.DiffTestEngine = DiffTestEngine
sys.modules["DiffTestEngine"] = stub
spec = importlib.util.spec_from_file_location("ctb_start", start)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import BaseRepoAdapter as base
found = [v for v in vars(module).values() if inspect.isclass(v)
         and issubclass(v, base.BaseRepoAdapter) and v is not base.BaseRepoAdapter
         and not inspect.isabstract(v)]
if len(found) != 1:
    raise SystemExit(f"start.py defines {len(found)} adapters, not one")
adapter = found[0]()
"""

FUZZ_MAIN = r"""
import importlib.util, inspect, json, os, random, sys, types

seed, start = int(sys.argv[1]), sys.argv[2]
random.seed(seed)  # before start.py is imported: its import may draw
""" + LOAD_ADAPTER + r"""class Result:
    exit_code = 0
    output = b""
class Recorder:
    id = "recorder"
    def __init__(self):
        self.commands = []
    def exec_run(self, cmd, *args, **kwargs):
        self.commands.append(cmd if isinstance(cmd, str) else " ".join(map(str, cmd)))
        return Result()
recorder = Recorder()
adapter.install_oracle(recorder)
random.seed(seed)
cases = [{"command": c.command, "category": c.category, "prep_script": c.prep_script,
          "mount_files": c.mount_files, "env_vars": c.env_vars}
         for c in adapter.generate_test_cases()]
own = getattr(base.BaseRepoAdapter, "sanitize_stdout", None)
sanitizes = own is not None and type(adapter).sanitize_stdout is not own
json.dump({"base_image": adapter.base_image, "install": recorder.commands, "cases": cases,
           "sanitizes": sanitizes}, out)
out.close()
"""

# The program of an imported tool's [sanitizer] (evaluation/sanitizer.py runs it in a box):
# the tool's adapter, loaded as FUZZ_MAIN loads it (its folder holds the fuzzer's files at
# their paths in the tree), masks each text of the JSON list on its stdin with its own
# sanitize_stdout — BaseRepoAdapter's (ANSI escapes removed) when it does not override it —
# as CLI-Tool-Bench does before comparing. Anything the adapter prints goes to stderr.
SANITIZE_MAIN = r"""
import importlib.util, inspect, json, os, sys, types

here = os.path.dirname(os.path.abspath(__file__))
start = os.path.join(here, sys.argv[1])
texts = json.load(sys.stdin)
""" + LOAD_ADAPTER + r"""mask = getattr(adapter, "sanitize_stdout", None) or (lambda text: text)
json.dump([mask(t) for t in texts], out, ensure_ascii=False)
out.close()
"""
