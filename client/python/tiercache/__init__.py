"""tiercache: read datasets through the node's tiercached (ctypes over
libtiercache; standard library only).

    import tiercache
    with tiercache.Client() as tc:
        with tc.open("imagenet/train/n01440764/img_1.jpg") as f:
            data = f.read()
        for dirpath, dirnames, filenames in tc.walk("imagenet/train"):
            ...

PyTorch: tiercache.torch (Dataset, PlanSampler). See docs/python.md.
"""

from ._lib import LIBRARY_ENV, LibraryNotFoundError
from .client import (Client, DirEntry, Error, File, StatResult, job_id, make_error,
                     plan_supported)

__version__ = "0.1.0"

__all__ = [
    "Client", "DirEntry", "Error", "File", "LibraryNotFoundError", "LIBRARY_ENV",
    "StatResult", "job_id", "make_error", "plan_supported",
]
