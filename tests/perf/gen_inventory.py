#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Write a synthetic cluster inventory (N nodes x 8 rails, 2 leaves per 32 nodes) for timing controller-side work.

Usage: tests/perf/gen_inventory.py NODES DEST_DIR
"""
from __future__ import annotations
import sys
from pathlib import Path

RAILS = 8


def main(nodes, dest):
    dest = Path(dest)
    (dest / 'group_vars').mkdir(parents=True, exist_ok=True)
    leaves = max(2, 2 * ((nodes + 31) // 32))
    lines = ['hpc_cluster:', '  children:', '    gpu_nodes:', '      hosts:']
    for i in range(nodes):
        lines.append('        gpu%04d:' % (i + 1))
        lines.append('          ansible_host: 10.%d.%d.%d' % (10 + i // 65000, (i // 250) % 256, i % 250 + 1))
        lines.append('          fabric_network_interfaces:')
        for r in range(RAILS):
            # one /20 per rail: up to 4094 nodes
            host = i + 1
            lines.append('            - {name: rail%d, address: 10.%d.%d.%d/20, rail: %d}' % (r, 100 + r, host // 256, host % 256, r))
    lines += ['    fabric_switches:', '      hosts:']
    for j in range(leaves):
        lines.append('        leaf%03d: {switch_qos_platform: sonic, switch_qos_ports: [Ethernet0, Ethernet8]}' % (j + 1))
    (dest / 'hosts.yml').write_text('\n'.join(lines) + '\n')
    rails = ['fabric_network_rails:'] + ['  - {name: r%d, subnet: 10.%d.0.0/20}' % (r, 100 + r) for r in range(RAILS)]
    (dest / 'group_vars' / 'gpu_nodes.yml').write_text('\n'.join(rails + ['mpi_hostfile_slots: 8']) + '\n')


if __name__ == '__main__':
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(__doc__)
    main(int(sys.argv[1]), sys.argv[2])
