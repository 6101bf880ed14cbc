"""Settings for the model-backend tests.

llama.cpp and torch each bring an OpenMP runtime whose idle threads spin by default; in one
test process on a small machine (CI: 2 cores) the two pools starve each other and the slow
tests of the gguf and hf backends take about three times as long. Passive waiting avoids
that. It only takes effect for runtimes loaded after this file (torch and llama_cpp are
imported lazily, by the fixtures), and a value the caller set is kept.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
