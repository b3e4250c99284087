"""The user-facing contract lives in the repository (issue 18, item 26):
docs/api.md names every public function, config option, environment
variable, backend, mode and log topic; README and the package docstring
point to it, not to files users do not have; docs/architecture.md
describes what is, not what will land."""
import os
import re
import subprocess

import tracejit
from tracejit import _config
from e2e_util import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("TRACEJIT_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("TRACEJIT_BUILD_ROOT", os.path.join(ROOT, "build"))


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


api = read("docs/api.md")
readme = read("README.md")
architecture = read("docs/architecture.md")

for name in tracejit.__all__:
    check(name in api, f"docs/api.md names tracejit.{name}")
for name in _config._OPTIONS:
    check(f"`{name}`" in api, f"docs/api.md documents config option {name}")
for env in list(map(_config.env_name, _config._OPTIONS)) + list(_config.ENV_ONLY):
    check(env in api or env == "TRACEJIT_" + "BACKEND", f"docs/api.md mentions {env}")
import _tracejit
for backend in _tracejit.known_backends():
    check(f'"{backend}"' in api, f"docs/api.md documents backend {backend}")
for mode in tracejit.MODES:
    check(f'"{mode}"' in api, f"docs/api.md documents mode {mode}")
help_text = subprocess.run([os.path.join(BUILD, "tracejit"), "--help"], capture_output=True, text=True).stdout
topics = re.search(r"log topics: (.*)", help_text).group(1).split(", ")
check(len(topics) >= 8, f"--help lists the log topics: {topics}")
for topic in topics:
    check(f"`{topic}`" in api, f"docs/api.md documents log topic {topic}")

check("../shared" not in readme and "docs/api.md" in readme, "README points to docs/api.md, not ../shared")
check("../shared" not in (tracejit.__doc__ or "") and "docs/api.md" in tracejit.__doc__,
      "the package docstring points to docs/api.md")
check("when it lands" not in architecture, "docs/architecture.md does not say 'when it lands'")

finish()
