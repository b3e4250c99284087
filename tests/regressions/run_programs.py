"""Runs regression programs one after the other in this process (under the
launcher), as check_regression.py would run each in a launcher of its own:
a program's text (its `BACKEND = "..."` line naming the given backend, if
one is given) runs as __main__ in a fresh namespace with its stdout
captured, and tracejit.reset() follows. One `RESULT {...}` line per
program (its name, backend, exit status and what it printed) for
check_regression.py --many to check. A launcher's start costs ~2 s of CPU;
a program's own run a fraction of that.

Usage (under build/tracejit): run_programs.py PROGRAM.py[@BACKEND]..."""
import contextlib
import io
import json
import sys
import traceback

import tracejit
from check_regression import text_with_backend


def run(path, backend):
    """(stdout, exit status) of the program, as a process of its own would give them."""
    code = compile(text_with_backend(path, backend) if backend else open(path).read(), path, "exec")
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    out = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out):
        try:
            exec(code, namespace)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - what a process would print before exiting 1
            traceback.print_exc()
            status = 1
    tracejit.reset()
    return out.getvalue(), status


def main():
    for arg in sys.argv[1:]:
        path, _, backend = arg.partition("@")
        stdout, status = run(path, backend or None)
        print("RESULT " + json.dumps({"program": path, "backend": backend, "status": status, "stdout": stdout}),
              flush=True)


if __name__ == "__main__":
    main()
