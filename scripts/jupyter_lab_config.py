"""JupyterLab server settings for `make lab` (passed with --config; the quiet options are on the
Makefile's command line), so that the server prints the URL and nothing else a learner must read:

- after each save, scripts/nbstrip.py's ``post_save`` keeps git's view of a notebook that was only
  run clean;
- the course's notebooks as committed (no outputs) are signed as trusted when the server starts:
  nothing in them to vouch for, and unsigned, each opening logged "Notebook … is not trusted";
- kernels get CurveZMQ keys from the server (jupyter_client's ``transport_encryption``, for
  kernels whose kernelspec declares it, as ipykernel's does), so what they send over TCP on
  127.0.0.1 is encrypted: without, ipykernel warned at every start that it is plain text;
- the websocket ping timeout equals the ping interval, as tornado >= 6.5 requires (jupyter_server's
  default, three intervals, was logged and clamped on every kernel connection).

Only the server reads this file; kernels never see scripts/.
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbstrip  # noqa: E402  (a sibling script, not a package)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def trust_notebooks_without_outputs(folder: Path) -> list[Path]:
    """Sign each notebook in ``folder`` that has no outputs (as the course ships it); a notebook
    with outputs is left as it is (the server signed it when it saved them). Returns those signed."""
    import nbformat
    from nbformat.sign import NotebookNotary

    notary, signed = NotebookNotary(), []
    for path in sorted(folder.glob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except (OSError, ValueError):
            continue  # not a notebook JupyterLab could open either: its own error says so
        if any(cell.get("outputs") for cell in nb.cells) or notary.check_signature(nb):
            continue
        notary.sign(nb)
        signed.append(path)
    return signed


# The server applies its config twice; the second assignment would warn that it overrides the first.
warnings.filterwarnings("ignore", message="Overriding existing post_save_hook")
c = get_config()  # noqa: F821  (traitlets provides get_config to config files)
c.ContentsManager.post_save_hook = nbstrip.post_save
c.KernelManager.transport_encryption = "auto"
c.ServerApp.tornado_settings = {"ws_ping_timeout": 30_000}  # ms: jupyter_server's ping interval
if NOTEBOOKS.is_dir():
    trust_notebooks_without_outputs(NOTEBOOKS)
