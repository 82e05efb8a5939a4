"""Reading, forging and searching model files (``save_model``'s zips) in tests."""
import io
import json
import zipfile

import numpy as np


def read_zip(path):
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def write_zip(path, entries, meta=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            if name == "model.json" and meta is not None:
                data = json.dumps(meta).encode()
            zf.writestr(name, data)
    return path


def npy(array, allow_pickle=False):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def find(node, pred):
    """The first JSON node (depth first) for which ``pred`` holds."""
    stack = [node]
    while stack:
        n = stack.pop()
        if pred(n):
            return n
        if isinstance(n, dict):
            stack.extend(reversed(list(n.values())))
        elif isinstance(n, list):
            stack.extend(reversed(n))
    raise LookupError
