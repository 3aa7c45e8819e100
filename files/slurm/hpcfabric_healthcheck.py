# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Slurm's node health check (``HealthCheckProgram``): this node's GPUs and fabric RDMA ports, and its drain.

    hpcfabric_healthcheck.py [--config config.json] [--node NAME] [--dry-run] [--sysfs-root /sys] [--procfs-root /proc]

slurmd runs it as root every ``HealthCheckInterval`` seconds and kills it after 60: every command it starts has a
timeout, and all of them together stay under that. The slurm role installs it with the collection's own parsers beside
it (``gpu_health.py``, ``ib_sysfs.py`` and what they import, ``slurm_conf.py``: standard library only) and writes what
this node must have into ``config.json`` beside it::

    {"node": "node01", "gpu_count": 8, "rdma": true, "rdma_interfaces": ["fab0", "fab1"], "port_rate_gbps": 400,
     "xid_window_s": null}

- ``gpu_count``: the GPUs nvidia-smi must see (0: no GPU check at all, nor of the driver or the XIDs);
- ``rdma``: check RDMA ports; ``rdma_interfaces``: the fabric netdevs that each need an RDMA port Active at
  ``port_rate_gbps`` (null: any rate); none named: at least one RDMA port must be Active at that rate;
- ``xid_window_s``: the kernel log read for XIDs, in seconds back from now; null: since boot. The XIDs counted are the
  ones NVIDIA's catalog puts on the hardware (``gpu_health.HARDWARE_XIDS``), whose action is a GPU reset or a reboot;
- ``node``: this node's Slurm name (else ``--node``, ``$SLURMD_NODENAME``, ``hostname -s``).

Healthy: exit 0, nothing printed; a node drained earlier by this check (reason ``hpcfabric: health: ...``) is resumed.
Unhealthy: one line per problem, exit 1, and the node drained with the first problem as its reason, unless
``--dry-run``. A node drained or down for any other reason - an operator's, the validation's (``hpcfabric:`` without
``health:``) - is never touched. A reader that fails is a problem of its own, never a crash.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

try:  # the copies the slurm role installs beside this file
    import gpu_health
    import ib_sysfs
    import slurm_conf
except ImportError:  # run from a collection checkout (the unit tests)
    from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health, ib_sysfs, slurm_conf

# the reasons this check writes, and the only ones it ever resumes
HEALTH_PREFIX = slurm_conf.HEALTH_PREFIX
# slurmd kills the program at 60 s. The readers share 30 s (one command at most 20, so that a hung nvidia-smi leaves
# time for the kernel log) and each scontrol call gets 10: 50 s at worst, with the interpreter's start.
READ_BUDGET_S = 30
COMMAND_TIMEOUT_S = 20
SCONTROL_TIMEOUT_S = 10


# --- decisions ----------------------------------------------------------------------------------------------------

def _rate(value):
    return '%g' % value


def _port_problem(device, number, port, rate):
    label = 'RDMA %s port %s%s' % (device, number, ' (%s)' % port['netdev'] if port.get('netdev') else '')
    if port.get('state') != 'Active':
        return '%s: %s, not Active' % (label, port.get('state') or 'state unreadable')
    if rate and (port.get('rate_gbps') is None or port['rate_gbps'] < rate):
        seen = 'rate unreadable' if port.get('rate_gbps') is None else '%s Gb/s' % _rate(port['rate_gbps'])
        return '%s: %s, expected %s Gb/s' % (label, seen, _rate(rate))
    return None


def _gpu_problems(config, readings):
    expected = config.get('gpu_count') or 0
    if not expected:
        return []
    failed = readings.get('failed') or {}
    found = []
    gpus = readings.get('gpus')
    if not readings.get('driver'):
        found.append('NVIDIA driver not loaded (no /proc/driver/nvidia/version)')
    elif 'nvidia-smi' in failed:
        found.append('nvidia-smi failed: %s' % failed['nvidia-smi'])
    elif len(gpus or []) < expected:
        found.append('GPUs: nvidia-smi sees %d of %d' % (len(gpus or []), expected))
    if 'kernel log' in failed:
        found.append('kernel log failed: %s' % failed['kernel log'])
    # the collection's one rule for which XIDs are the hardware's (the application's ones clear when the job ends)
    findings = gpu_health.health_findings(config.get('node') or '', {'xids': readings.get('xids') or []})
    found += ['%s: %s' % (finding['device'], finding['seen']) for finding in findings]
    return found


def _rdma_problems(config, readings):
    if not config.get('rdma'):
        return []
    failed = readings.get('failed') or {}
    if 'RDMA' in failed:
        return ['RDMA failed: %s' % failed['RDMA']]
    devices = readings.get('rdma') or {}
    rate = config.get('port_rate_gbps')
    ports = [(device, number, port) for device, info in sorted(devices.items())
             for number, port in sorted((info.get('ports') or {}).items(), key=lambda item: int(item[0]))]
    wanted = config.get('rdma_interfaces') or []
    if not wanted:
        if not ports:
            return ['RDMA: no device under %s' % readings.get('rdma_dir', 'class/infiniband')]
        active = [(device, number, port) for device, number, port in ports if port.get('state') == 'Active']
        if not active:
            return ['RDMA: no Active port (%s)' % ', '.join('%s port %s %s' % (device, number, port.get('state'))
                                                            for device, number, port in ports)]
        return [problem for problem in (_port_problem(device, number, port, rate) for device, number, port in active)
                if problem]
    by_netdev = {}
    for device, number, port in ports:
        if port.get('netdev'):
            by_netdev.setdefault(port['netdev'], (device, number, port))
    found = []
    for netdev in wanted:
        if netdev not in by_netdev:
            found.append('RDMA: no port behind fabric interface %s' % netdev)
            continue
        problem = _port_problem(*by_netdev[netdev], rate=rate)
        if problem:
            found.append(problem)
    return found


def problems(config, readings):
    """What is wrong with this node: one line each, the most telling first (the reason its drain gives).

    ``config`` as described above; ``readings``: ``{driver: the text of /proc/driver/nvidia/version or None, gpus:
    parse_nvidia_smi_xml(...), xids: parse_xids(...), rdma: read_devices(...)[0], rdma_dir, failed: {source: why}}``,
    a source in ``failed`` (``config``, ``nvidia-smi``, ``kernel log``, ``RDMA``) being one that could not be read.
    """
    failed = readings.get('failed') or {}
    if 'config' in failed:
        # without its expectations the check can say nothing of the node: its health is unknown, not good
        return ['config failed: %s' % failed['config']]
    return _gpu_problems(config, readings) + _rdma_problems(config, readings)


def action(found, fields):
    """``(what, reason)`` for this node: ``('drain', reason)``, ``('resume', the reason it had)`` or ``(None, None)``.

    ``found``: ``problems()``; ``fields``: the node's ``scontrol show node`` fields (``State``, ``Reason``), None where
    they could not be read (then nothing is done: whose drain it is cannot be told). A node with problems is drained
    with ``hpcfabric: health: <first problem>`` (one line, no double quotes, at most 120 characters) unless it is
    drained or down for a reason that is not this check's, or already drained with the same reason. A node without
    problems is resumed only when this check drained it.
    """
    if fields is None:
        return None, None
    reason = slurm_conf.own_reason(fields.get('Reason'))
    ours = reason.startswith(HEALTH_PREFIX)
    drained = slurm_conf.is_drained(fields)
    down = slurm_conf.is_down(fields)
    if found:
        wanted = slurm_conf.drain_reason('health: %s' % found[0])
        if (drained or down) and not ours:
            return None, None
        if drained and reason == wanted:
            return None, None
        return 'drain', wanted
    if drained and ours:
        return 'resume', reason
    return None, None


# --- readers ------------------------------------------------------------------------------------------------------

def _timeout(deadline, cap):
    """A command's timeout: ``cap``, or less where the readers' share of slurmd's limit runs out first."""
    return max(1, min(cap, int(deadline - time.monotonic())))


def run(argv, timeout):
    """``(stdout, None)`` or ``(None, why)``. A command past its timeout is killed and not waited for: a wedged GPU
    leaves nvidia-smi in an uninterruptible sleep that no signal ends, and waiting would outlast slurmd's limit."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
    except OSError as exc:
        return None, '%s: %s' % (argv[0], exc.strerror or exc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None, '%s: no answer in %d s' % (argv[0], timeout)
    if proc.returncode:
        detail = ' '.join((err or out or '').split())[:200]
        return None, '%s: exit %d%s' % (argv[0], proc.returncode, ': ' + detail if detail else '')
    return out, None


def _read_text(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def read_kernel_log(window, deadline):
    """The kernel log since boot (``window`` None) or of the last ``window`` seconds: ``(text, None)`` or ``(None,
    why)``. dmesg, where journald keeps no kernel log, holds the ring buffer since boot whatever the window."""
    since = ['-b'] if window is None else ['--since=-%ds' % int(window)]
    text, why = run(['journalctl', '-k', '--no-pager', '-q', '-o', 'short'] + since,
                    _timeout(deadline, COMMAND_TIMEOUT_S))
    # no kernel line at all since boot is a journald that does not read the kernel's (a container, a journald
    # configured without it), not a quiet kernel
    if why is None and (text.strip() or window is not None):
        return text, None
    text, fallback = run(['dmesg'], _timeout(deadline, COMMAND_TIMEOUT_S))
    if fallback is None:
        return text, None
    return None, '%s; %s' % (why or 'journalctl -k: no kernel line since boot', fallback)


def read_node(config, sysfs_root, procfs_root):
    """What ``problems()`` judges, read from this node; only what ``config`` asks for."""
    deadline = time.monotonic() + READ_BUDGET_S
    readings = {'failed': {}}
    failed = readings['failed']
    if config.get('gpu_count'):
        readings['driver'] = _read_text(os.path.join(procfs_root, 'driver', 'nvidia', 'version'))
        # without the driver nvidia-smi only says so, after its own timeout on some versions
        if readings['driver']:
            text, why = run(['nvidia-smi', '-q', '-x'], _timeout(deadline, COMMAND_TIMEOUT_S))
            if why is None:
                try:
                    readings['gpus'] = gpu_health.parse_nvidia_smi_xml(text)
                except ValueError as exc:
                    why = 'unreadable output: %s' % exc
            if why is not None:
                failed['nvidia-smi'] = why
        text, why = read_kernel_log(config.get('xid_window_s'), deadline)
        if why is None:
            readings['xids'] = gpu_health.parse_xids(text)
        else:
            failed['kernel log'] = why
    if config.get('rdma'):
        directory = ib_sysfs.class_dir(sysfs_root)
        readings['rdma_dir'] = directory
        try:
            readings['rdma'] = ib_sysfs.read_devices(directory)[0]
        except (OSError, ValueError) as exc:
            failed['RDMA'] = '%s: %s' % (directory, exc)
    return readings


def load_config(path):
    """``(config, None)`` or ``({}, why)``."""
    try:
        with open(path, encoding='utf-8') as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        return {}, 'cannot read %s: %s' % (path, exc)
    if not isinstance(config, dict):
        return {}, '%s: not a JSON object' % path
    count = config.get('gpu_count') or 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return {}, '%s: gpu_count must be a whole number, got %r' % (path, config.get('gpu_count'))
    rate = config.get('port_rate_gbps')
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        return {}, '%s: port_rate_gbps must be a positive number or null, got %r' % (path, rate)
    window = config.get('xid_window_s')
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        return {}, '%s: xid_window_s must be a whole number of seconds or null, got %r' % (path, window)
    if not isinstance(config.get('rdma_interfaces') or [], list):
        return {}, '%s: rdma_interfaces must be a list of netdev names' % path
    return config, None


def node_fields(name):
    """``(fields, None)`` of this node in ``scontrol --oneliner show node``, or ``(None, why)``."""
    text, why = run(['scontrol', '--oneliner', 'show', 'node', name], SCONTROL_TIMEOUT_S)
    if why is not None:
        return None, why
    fields = slurm_conf.parse_scontrol_nodes(text).get(name)
    return (fields, None) if fields is not None else (None, 'slurmctld does not know node %s' % name)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Slurm's node health check: GPUs and fabric RDMA ports.")
    parser.add_argument('--config', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'config.json'),
                        help='what this node must have (written by the slurm role beside this file)')
    parser.add_argument('--node', help="this node's Slurm name (default: the config's, $SLURMD_NODENAME, hostname -s)")
    parser.add_argument('--dry-run', action='store_true', help='say what is wrong, drain or resume nothing')
    parser.add_argument('--sysfs-root', default='/sys')
    parser.add_argument('--procfs-root', default='/proc')
    args = parser.parse_args(argv)
    config, why = load_config(args.config)
    readings = {'failed': {'config': why}} if why else read_node(config, args.sysfs_root, args.procfs_root)
    found = problems(config, readings)
    for line in found:
        print(line)
    name = (args.node or config.get('node') or os.environ.get('SLURMD_NODENAME')
            or socket.gethostname().split('.')[0])
    fields, why = node_fields(name)
    if why is not None:
        print('scontrol show node %s failed: %s; the node is left as it is' % (name, why), file=sys.stderr)
    what, reason = action(found, fields)
    if what and args.dry_run:
        print('dry run: would %s %s (%s)' % (what, name, reason), file=sys.stderr)
    elif what:
        update = ['State=DRAIN', 'Reason=%s' % reason] if what == 'drain' else ['State=RESUME']
        dummy, why = run(['scontrol', 'update', 'NodeName=%s' % name] + update, SCONTROL_TIMEOUT_S)
        if why is not None:
            print('scontrol update failed: %s' % why, file=sys.stderr)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
