# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Print ``{os cpu: [socket, core id]}`` of this host's CPUs as JSON, from sysfs (argument: another sysfs CPU
directory, for tests). The slurm role maps the CPUs nvidia-smi says a GPU is near to Slurm's core indexes with it
(gres.conf ``Cores=``). An offline CPU has no topology and is left out."""
from __future__ import annotations

import glob
import json
import os
import re
import sys


def topology(root):
    found = {}
    for path in glob.glob(os.path.join(root, 'cpu[0-9]*')):
        cpu = int(re.search(r'(\d+)$', path).group(1))
        try:
            with open(os.path.join(path, 'topology', 'physical_package_id'), encoding='ascii') as handle:
                socket = int(handle.read())
            with open(os.path.join(path, 'topology', 'core_id'), encoding='ascii') as handle:
                core = int(handle.read())
        except (OSError, ValueError):
            continue
        found[cpu] = [socket, core]
    return found


if __name__ == '__main__':
    print(json.dumps(topology(sys.argv[1] if len(sys.argv) > 1 else '/sys/devices/system/cpu'), sort_keys=True))
