"""The oneDNN e2e programs' second half, shared (onednn_attention.py,
onednn_transformer.py): their `run_all(tracejit.compile)` run again in two
child launcher processes with the llvm backend's output_code log, one with
TRACEJIT_ONEDNN=1 and one with TRACEJIT_ONEDNN=0; the caller checks each
child's log, and both children's values are checked against each other and
against eager's."""
import os
import subprocess
import tempfile

import torch

from e2e_util import check

# The Linear steps on every CPU: by default a CPU without AVX-512 runs Linears as ATen's (onednn_plan.h's
# LinearMode), and these programs check the oneDNN Linear steps' logs and values.
os.environ.setdefault("TRACEJIT_ONEDNN_LINEAR", "1")

LAUNCHER = os.path.join(os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                        "tracejit")


def check_onednn_on_and_off(module, eager, close, check_log):
    """Runs `module.run_all(tracejit.compile)` (module: an e2e program's name) in a child per flag;
    `check_log(flag, stderr_lines)` checks a child's log; `close(a, b)` compares two results."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r})\nimport torch, tracejit\nfrom {module} import run_all\n"
            "torch.save(run_all(lambda f: tracejit.compile(f, backend='llvm')), sys.argv[1])\n")
    with tempfile.TemporaryDirectory() as d:
        outs = []
        for flag in ("1", "0"):
            out = os.path.join(d, f"out{flag}.pt")
            env = dict(os.environ, TRACEJIT_ONEDNN=flag, TRACEJIT_LOGS="output_code")
            r = subprocess.run([LAUNCHER, "-c", code, out], env=env, capture_output=True, text=True)
            check(r.returncode == 0, f"TRACEJIT_ONEDNN={flag} child ran: {r.stderr[-2000:]}")
            check_log(flag, r.stderr.splitlines())
            outs.append(torch.load(out) if r.returncode == 0 else None)
    check(outs[0] is not None and outs[1] is not None and close(outs[0], outs[1]),
          "TRACEJIT_ONEDNN=0 gives the values of the oneDNN path")
    check(outs[0] is not None and close(outs[0], eager), "... and eager's")
