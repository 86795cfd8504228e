"""JupyterLab server settings for `make lab` (passed with --config; the quiet options are on the
Makefile's command line): after each save, scripts/nbstrip.py's ``post_save`` keeps git's view of a
notebook that was only run clean. Only the server reads this file; kernels never see scripts/.
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbstrip  # noqa: E402  (a sibling script, not a package)

# The server applies its config twice; the second assignment would warn that it overrides the first.
warnings.filterwarnings("ignore", message="Overriding existing post_save_hook")
c = get_config()  # noqa: F821  (traitlets provides get_config to config files)
c.ContentsManager.post_save_hook = nbstrip.post_save
