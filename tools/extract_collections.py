# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Unpack the named collections from the PyPI 'ansible' wheel into DEST/ansible_collections."""
from __future__ import annotations
import shutil
import sys
import zipfile
from pathlib import Path


def main(wheel, dest, names):
    dest = Path(dest)
    prefixes = tuple('ansible_collections/%s/' % n.replace('.', '/') for n in names)
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.startswith(prefixes)]
        found = {n for n in names if any(m.startswith('ansible_collections/%s/' % n.replace('.', '/')) for m in members)}
        missing = sorted(set(names) - found)
        if missing:
            sys.exit('error: %s does not contain %s' % (wheel, ', '.join(missing)))
        for n in names:
            shutil.rmtree(dest / 'ansible_collections' / n.replace('.', '/'), ignore_errors=True)
        z.extractall(dest, members)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
