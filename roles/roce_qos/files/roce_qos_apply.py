# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Apply or verify the hpcfabric lossless RoCE policy on this host (run by hpcfabric-roce-qos.service).

    python3 roce_qos_apply.py apply|verify|detect --config /etc/hpcfabric/roce-qos.json [--interface IF] [--json]

The roce_qos role installs this file next to roce_host.py (the collection's module_utils, standard
library only) and writes the resolved policy to the --config file. `apply` changes what differs from
the policy and reads the NICs back; the exit status is 1 when a NIC still differs or a command failed,
so `systemctl --failed` shows it. A node without a RoCE-capable NIC exits 0 after saying so.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import subprocess
import sys

try:
    import roce_host
except ImportError:  # run from a collection checkout (tests) rather than from the installed copy
    from ansible_collections.hpcfabric.cluster.plugins.module_utils import roce_host

LOCK_PATH = '/run/hpcfabric-roce-qos.lock'


def run(argv):
    """Run a command; return (rc, stdout, stderr) like AnsibleModule.run_command."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    except OSError as exc:
        return 127, '', str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description='Apply or verify the hpcfabric lossless RoCE policy on this host.')
    parser.add_argument('mode', choices=('apply', 'verify', 'detect'))
    parser.add_argument('--config', required=True, help='JSON written by the roce_qos role')
    parser.add_argument('--interface', help='only this fabric interface (udev hot-plug)')
    parser.add_argument('--sysfs-root', default='/sys')
    parser.add_argument('--configfs-root', default='/sys/kernel/config')
    parser.add_argument('--lock', default=LOCK_PATH, help='serialises the boot and hot-plug units; empty for none')
    parser.add_argument('--json', action='store_true', help='print the result as JSON')
    args = parser.parse_args(argv)
    try:
        with open(args.config) as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        print('cannot read %s: %s' % (args.config, exc), file=sys.stderr)
        return 2
    if args.interface:
        if args.interface not in config['interfaces']:
            print('%s is not a fabric interface in %s: nothing to do' % (args.interface, args.config))
            return 0
        config['interfaces'] = [args.interface]
    host = roce_host.RoceHost(config, run=run, which=shutil.which, sysfs_root=args.sysfs_root, configfs_root=args.configfs_root)
    try:
        with Lock(args.lock):
            result = run_mode(host, args.mode)
    except roce_host.HostError as exc:
        print('error: %s' % exc, file=sys.stderr)
        return 1
    report(result, args.json)
    return 1 if result['differences'] else 0


def run_mode(host, mode):
    if mode == 'detect':
        return host.detect()
    if mode == 'verify':
        return host.verify()
    result = host.apply()
    # MTU belongs to the network configuration, which may come up after this unit
    result['differences'] = host.verify(include_mtu=False)['differences'] if result['capable_interfaces'] else []
    return result


class Lock(object):
    """An exclusive flock on ``path`` (the boot unit and a hot-plug unit may start together)."""

    def __init__(self, path):
        self.path = path
        self.handle = None

    def __enter__(self):
        if self.path:
            self.handle = open(self.path, 'a')
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.handle:
            self.handle.close()
        return False


def report(result, as_json):
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return
    if not result['capable_interfaces']:
        checked = ', '.join('%s (%s)' % (nic['name'], nic['reason']) for nic in result['interfaces']) or 'none configured'
        print('%s: no RoCE-capable NIC; checked %s' % (result['host'], checked))
    for line in result['changes']:
        print('set %s' % line)
    for line in result['warnings']:
        print('warning: %s' % line)
    for line in result['differences']:
        print('differs: %s' % line)


if __name__ == '__main__':
    sys.exit(main())
