# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Slurm's configuration, rendered from the cluster model, and the decisions the slurm role and the validation make.

Pure functions, no I/O:

- ``hostlist_expand``/``hostlist_compress``: Slurm's host list expressions (``node[001-128]``).
- ``node_hardware``: a node's CPUs and memory from its setup facts (the cluster model holds its GPUs).
- ``cluster_plan``: the cluster model plus the role's settings -> the controllers, node groups of identical hardware,
  partitions, leaves, plugins and the problems that stop anything from being rendered (naming variable and host).
- ``render_slurm_conf``, ``render_gres_conf``, ``render_cgroup_conf``, ``render_topology_conf``: the files slurmctld
  serves in configless mode (``SlurmctldParameters=enable_configless``), one text each.
- ``render_slurmdbd_conf``, ``accounting_sql``: accounting (slurmdbd and its MariaDB database on the primary
  controller); the database password is an argument of these two alone, never part of the plan, which Ansible prints.
- ``restart_needed``: whether a change of ``slurm.conf`` needs daemons restarted or only ``scontrol reconfigure``.
- ``munge_key_action``: what to do with a node's munge key.
- ``parse_scontrol_nodes`` and ``node_readback_problems``: ``scontrol show node -o`` read back against the plan.
- ``drain_resume_actions``: which nodes the validation drains and resumes; only reasons with the ``hpcfabric:``
  prefix are ever its own.

The node lines come from one list of nodes (the model's hosts in inventory order) and the hardware read on them,
never from the hosts a run happens to reach: a ``--limit``-ed run renders every node or refuses, naming the nodes
whose hardware it lacks.
"""
from __future__ import annotations

import re

# the prefix of every drain reason the validation writes; a reason without it is someone else's
REASON_PREFIX = 'hpcfabric:'
# the node health check's own (files/slurm/hpcfabric_healthcheck.py): it drains and resumes those itself, and the
# validation leaves them to it
HEALTH_PREFIX = REASON_PREFIX + ' health:'
# Slurm keeps a node's reason in a fixed buffer; scontrol accepts longer ones but sinfo and squeue cut them
REASON_MAX = 120

_HOSTLIST_TOKEN = re.compile(r'([^\[\],]*)(?:\[([^\]]*)\])?')
_NAME_NUMBER = re.compile(r'^(.*?)(\d+)$')
_NODE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')
_VERSION = re.compile(r'^(\d+)\.(\d+)')
# Slurm versions this role renders for: the oldest it knows, and the two changes that matter here
_TASK_NONE_REMOVED = (23, 11)
AUTODETECT_NVIDIA = (24, 11)
# slurm.conf settings that slurmctld or slurmd read only at start (slurm.conf(5), scontrol(1) "reconfigure"):
# a change of one restarts the daemons instead of reconfiguring them
_RESTART_KEYS = ('AccountingStorageHost', 'AccountingStorageType', 'AuthType', 'ClusterName', 'GresTypes',
                 'JobAcctGatherType', 'MpiDefault', 'PluginDir', 'ProctrackType', 'SelectType', 'SelectTypeParameters',
                 'SlurmctldHost', 'SlurmctldParameters', 'SlurmctldPort', 'SlurmdPort', 'SlurmdSpoolDir', 'SlurmUser',
                 'StateSaveLocation', 'SwitchType', 'TaskPlugin', 'TopologyPlugin')
# from 23.11 the slurmdbd.service Slurm ships runs slurmdbd as the slurm user, with /run/slurmdbd as its runtime
# directory; before, as root (Debian 12's unit: PIDFile=/run/slurmdbd.pid)
_SLURMDBD_AS_SLURM = (23, 11)
# what slurmdbd.conf and MariaDB's option files cannot carry in an unquoted value: blanks end it, '#' starts a comment,
# quotes and backslashes are read as quoting (and the password sits in an SQL string between single quotes)
_PASSWORD_FORBIDDEN = '#"\'\\`'
PASSWORD_MIN = 12
# node states (scontrol show node State=) in which a node takes jobs; anything else is a read-back problem
_USABLE_STATES = ('IDLE', 'MIXED', 'ALLOCATED', 'COMPLETING')


# --- host lists ---------------------------------------------------------------------------------------------------

def _split_top(expression):
    """Split a host list on the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(expression):
        if char == '[':
            depth += 1
            if depth > 1:
                raise ValueError('%r: nested brackets' % expression)
        elif char == ']':
            depth -= 1
            if depth < 0:
                raise ValueError('%r: "]" without "["' % expression)
        elif char == ',' and depth == 0:
            parts.append(expression[start:index])
            start = index + 1
    if depth:
        raise ValueError('%r: "[" without "]"' % expression)
    parts.append(expression[start:])
    return parts


def _range_values(expression, ranges):
    values = []
    for item in ranges.split(','):
        low, _sep, high = item.partition('-')
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError('%r: %r is not a number or a range of numbers' % (expression, item))
        high = high or low
        if int(high) < int(low):
            raise ValueError('%r: the range %s runs backwards' % (expression, item))
        width = len(low)
        values.extend('%0*d' % (width, number) for number in range(int(low), int(high) + 1))
    return values


def _expand_one(expression, part):
    names = ['']
    rest = part
    while rest:
        match = _HOSTLIST_TOKEN.match(rest)
        text, ranges = match.group(1), match.group(2)
        if not match.group(0):
            raise ValueError('%r: cannot read %r' % (expression, rest))
        names = [name + text for name in names]
        if ranges is not None:
            names = [name + value for name in names for value in _range_values(expression, ranges)]
        rest = rest[match.end():]
    return names


def hostlist_expand(expression):
    """The host names of a Slurm host list (``node[001-003,007],gpu-a[1-2]b``), in its order, without repeats.

    A range keeps the width of its first number (``[08-10]``: 08, 09, 10; ``[8-10]``: 8, 9, 10), as Slurm reads it.
    Raises ValueError on unbalanced or nested brackets, a range that runs backwards or an empty name.
    """
    if isinstance(expression, (list, tuple)):
        expression = ','.join(str(item) for item in expression)
    if not isinstance(expression, str):
        raise ValueError('a host list must be a string, got %s' % type(expression).__name__)
    names = []
    for part in _split_top(expression.strip()):
        if not part.strip():
            raise ValueError('%r: an empty name' % expression)
        names.extend(_expand_one(expression, part.strip()))
    return list(dict.fromkeys(names))


def hostlist_compress(names):
    """The shortest Slurm host list of ``names`` that ``hostlist_expand`` reads back to the same set.

    Names that end in digits and share the rest are joined in brackets: consecutive numbers become a range whose
    first number sets its width, so zero padding survives (``node001``..``node128`` -> ``node[001-128]``) and
    unpadded numbers may grow a digit (``node8``..``node10`` -> ``node[8-10]``), but ``node9`` and ``node010`` stay
    apart. Prefixes appear in the order of their first name; other names stand alone.
    """
    groups = {}
    for name in dict.fromkeys(str(name) for name in names):
        match = _NAME_NUMBER.match(name)
        if match:
            groups.setdefault((match.group(1), True), []).append(match.group(2))
        else:
            groups[(name, False)] = None
    parts = []
    for (prefix, numbered), numbers in groups.items():
        if not numbered:
            parts.append(prefix)
            continue
        ranges = []
        for digits in sorted(numbers, key=lambda d: (int(d), len(d))):
            if ranges:
                low, high = ranges[-1]
                width = len(low)
                if int(digits) == int(high) + 1 and '%0*d' % (width, int(digits)) == digits:
                    ranges[-1] = (low, digits)
                    continue
            ranges.append((digits, digits))
        text = ','.join(low if low == high else '%s-%s' % (low, high) for low, high in ranges)
        parts.append(prefix + text if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else '%s[%s]' % (prefix, text))
    return ','.join(parts)


# --- the plan -----------------------------------------------------------------------------------------------------

def version_tuple(version):
    """``(major, minor)`` of a Slurm version (``22.05``, ``22.05.8-4+deb12u3``, ``24.11.5``)."""
    match = _VERSION.match(str(version or ''))
    if not match:
        raise ValueError('%r is not a Slurm version (major.minor, e.g. 22.05)' % (version,))
    return int(match.group(1)), int(match.group(2))


def node_hardware(facts, memory_reserved_mb=0):
    """``{cpus, sockets, cores_per_socket, threads_per_core, real_memory}`` from a node's setup facts (the hardware
    subset), or None where the facts lack the CPU count or the memory.

    ``real_memory`` is the memory less ``memory_reserved_mb``, rounded down to a GiB, so that nodes of one model whose
    firmware keeps a few MB more or less still share a node line, and slurmd never finds less memory than configured
    (a node with less is set INVAL). The socket layout is given only when it multiplies out to the CPU count.
    """
    facts = facts if isinstance(facts, dict) else {}
    cpus = facts.get('processor_vcpus')
    memory = facts.get('memtotal_mb')
    if not _positive(cpus) or not _positive(memory):
        return None
    real = (memory - (memory_reserved_mb or 0)) // 1024 * 1024
    hardware = {'cpus': cpus, 'sockets': None, 'cores_per_socket': None, 'threads_per_core': None,
                'real_memory': real if real > 0 else None}
    layout = [facts.get('processor_count'), facts.get('processor_cores'), facts.get('processor_threads_per_core')]
    if all(_positive(value) for value in layout) and layout[0] * layout[1] * layout[2] == cpus:
        hardware.update(sockets=layout[0], cores_per_socket=layout[1], threads_per_core=layout[2])
    return hardware


def _positive(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def gpu_cores(gpu_cpus, cpu_cores):
    """Slurm's logical core indexes (gres.conf ``Cores=``) of the OS CPUs a GPU is near (``gpu_cpus``, as
    ``nvidia-smi topo -m`` prints its CPU affinity), given ``cpu_cores`` ``{os cpu: (socket, core id)}``.

    Slurm numbers cores socket by socket, not as the OS numbers CPUs (hyper-thread siblings and interleaved sockets
    differ), so the OS CPU ids are mapped through the core each belongs to. Returns a sorted list; CPUs the map lacks
    are skipped.
    """
    order = sorted(set(cpu_cores.values()))
    index = dict((core, position) for position, core in enumerate(order))
    return sorted(set(index[cpu_cores[cpu]] for cpu in gpu_cpus if cpu in cpu_cores))


def node_gpu_cores(gpus, cpu_map):
    """Per GPU (``gpu_topology`` facts' ``gpus``, in order), Slurm's core indexes near it (``gpu_cores``), from the
    node's ``cpu_map`` (``{os cpu: [socket, core id]}``, keys as str or int: ``files/cpu_topology.py``). None when a
    GPU's affinity is unknown (``N/A``) or the map is missing: then no GPU gets ``Cores=``, as one line for all of
    them with ``File=/dev/nvidia[0-N]`` is right and a partial list would bind some GPUs and not others."""
    if not gpus or not cpu_map:
        return None
    cores = dict((int(cpu), tuple(where)) for cpu, where in cpu_map.items())
    found = [gpu_cores(gpu.get('cpus') or [], cores) for gpu in gpus]
    return found if all(found) else None


def _ranges(numbers):
    """``0-3,8`` from [0, 1, 2, 3, 8]."""
    out = []
    for number in sorted(set(numbers)):
        if out and number == out[-1][1] + 1:
            out[-1][1] = number
        else:
            out.append([number, number])
    return ','.join(str(low) if low == high else '%d-%d' % (low, high) for low, high in out)


def plugins(version, cgroups):
    """``{ProctrackType, TaskPlugin}`` for a Slurm version and whether the nodes' cgroups are usable (a cgroup v2
    tree the daemons may write). ``TaskPlugin`` None: leave it out (Slurm 23.11 removed ``task/none``)."""
    if cgroups:
        return {'ProctrackType': 'proctrack/cgroup', 'TaskPlugin': 'task/cgroup,task/affinity'}
    return {'ProctrackType': 'proctrack/linuxproc',
            'TaskPlugin': None if version_tuple(version) >= _TASK_NONE_REMOVED else 'task/none'}


def _node_entry(host, model_node, hardware):
    gpus = (model_node or {}).get('gpu_count') or 0
    entry = dict(hardware or {})
    entry.update(name=host, gpus=gpus, gpu_cores=(hardware or {}).get('gpu_cores'))
    return entry


def _group_key(node):
    return (node['cpus'], node['sockets'], node['cores_per_socket'], node['threads_per_core'], node['real_memory'],
            node['gpus'], tuple(tuple(cores) for cores in node['gpu_cores'] or ()))


def inventory_problems(settings):
    """The rules across the inventory's hosts: one or two controllers, all of them inventory hosts; compute nodes
    with names Slurm takes; partitions and leaves naming only compute nodes, one default partition, a node under one
    leaf; ``AutoDetect=nvidia`` only where the version has it (a ``version`` None is not checked). ``settings`` as
    ``cluster_plan`` reads them; no facts needed, so ``check_inventory.yml`` can run them before any host is
    touched."""
    return _inventory(settings)[0]


def _inventory(settings):
    problems = []
    inventory = list(settings.get('inventory') or [])
    controllers = list(settings.get('controllers') or [])
    compute = list(settings.get('compute') or [])
    if not controllers:
        problems.append('slurm_controller_group: the group is empty or missing; Slurm needs one controller (two for '
                        'a backup)')
    if len(controllers) > 2:
        problems.append('slurm_controller_group: %d hosts (%s); Slurm takes a primary and at most one backup'
                        % (len(controllers), ', '.join(controllers)))
    for host in controllers:
        if inventory and host not in inventory:
            problems.append('slurm_controller_group on %s: not a host of the inventory' % host)
    if not compute:
        problems.append('slurm_compute_group: the group is empty or missing; Slurm has no node to run jobs on')
    for host in compute:
        if not _NODE_NAME.match(host):
            problems.append('slurm_compute_group on %s: %r cannot be a Slurm node name' % (host, host))
    # without facts (check_inventory) the version may be unknown: the rules that need it wait for the role
    version = settings.get('version')
    try:
        if version is not None:
            version_tuple(version)
    except ValueError as exc:
        problems.append('slurm_version: %s' % exc)
        version = None
    if settings.get('gres_autodetect') and version and version_tuple(version) < AUTODETECT_NVIDIA:
        problems.append('slurm_gres_autodetect: AutoDetect=nvidia needs Slurm 24.11 or later, this is %s; the explicit '
                        'File= lines need no detection' % version)
    partitions = _partitions(settings.get('partitions') or [], compute, problems)
    leaves = _leaves(settings.get('topology_leaves') or [], compute, problems)
    return problems, version, partitions, leaves


def cluster_plan(model, hardware, settings):
    """The plan every Slurm file is rendered from.

    ``model``: the cluster model (``cluster_model_plan``: its ``hosts`` and ``nodes``); ``hardware``: ``{host:
    node_hardware(...) or None}`` (optionally with ``gpu_cores``: one list per GPU); ``settings``: ``controllers``
    (the hosts of the controller group, in order), ``compute`` (the hosts of the compute group), ``inventory`` (every
    host of the inventory), ``version``, ``cgroups``, ``cluster_name``, ``partitions``, ``topology_leaves``,
    ``topology_spine``, ``gres_autodetect``, ``healthcheck`` (bool), ``healthcheck_program`` (its path on the nodes),
    ``healthcheck_interval`` (seconds), ``accounting`` (bool), ``accounting_db_name`` and ``accounting_db_user``.

    Returns ``{problems, controllers, nodes, groups, partitions, leaves, spine, version, cgroups, plugins,
    gres_autodetect, cluster_name, healthcheck, accounting}``; ``groups`` are ``{names, node}`` of nodes with identical
    hardware, in the order of their first node; ``healthcheck`` is ``{program, interval}`` or None; ``accounting`` is
    ``accounting_plan``'s. With problems, nothing may be rendered.
    """
    problems, version, partitions, leaves = _inventory(settings)
    if version is None and not any(p.startswith('slurm_version') for p in problems):
        problems.append('slurm_version: unknown; set it where the distribution has no Slurm this role knows')
    controllers = list(settings.get('controllers') or [])
    compute = list(settings.get('compute') or [])
    model_nodes = (model or {}).get('nodes') or {}
    hardware = hardware or {}
    missing = [host for host in compute if not hardware.get(host)]
    if missing:
        pronoun = 'it' if len(missing) == 1 else 'them'
        problems.append('slurm on %s: no CPU count and memory read on %s; run with those nodes reachable (a --limit '
                        'that leaves them out needs fact caching)' % (hostlist_compress(missing), pronoun))
    low = [host for host in compute if hardware.get(host) and not hardware[host].get('real_memory')]
    if low:
        problems.append('slurm_memory_reserved_mb on %s: leaves no memory for jobs' % hostlist_compress(low))
    # a node whose GPUs the model could not read (driver not answering, a --limit without fact caching) would get a
    # node line without them, and jobs asking for GPUs would never go there
    counts = dict((host, ((model_nodes.get(host) or {}).get('gpu_count'))) for host in compute)
    unread = [host for host, count in counts.items() if count is None]
    if unread and any(counts.values()):
        problems.append('slurm on %s: no GPU count in the cluster model, while other compute nodes have GPUs; run with '
                        'their GPUs answering (nvidia-smi) and in the play' % hostlist_compress(unread))
    autodetect = bool(settings.get('gres_autodetect'))
    healthcheck = None
    if settings.get('healthcheck') and settings.get('healthcheck_program'):
        healthcheck = {'program': settings['healthcheck_program'],
                       'interval': int(settings['healthcheck_interval'])}
    accounting = accounting_plan(settings, controllers, version)
    if problems:
        return {'problems': problems, 'controllers': controllers, 'nodes': [], 'groups': [], 'partitions': [],
                'leaves': [], 'spine': None, 'version': version, 'cgroups': bool(settings.get('cgroups')),
                'plugins': {}, 'gres_autodetect': autodetect, 'cluster_name': settings.get('cluster_name'),
                'healthcheck': healthcheck, 'accounting': accounting}
    nodes = [_node_entry(host, model_nodes.get(host), hardware[host]) for host in compute]
    groups = {}
    for node in nodes:
        groups.setdefault(_group_key(node), {'names': [], 'node': node})['names'].append(node['name'])
    return {'problems': [], 'controllers': controllers, 'nodes': nodes, 'groups': list(groups.values()),
            'partitions': partitions, 'leaves': leaves, 'spine': settings.get('topology_spine') or 'spine',
            'version': version, 'cgroups': bool(settings.get('cgroups')),
            'plugins': plugins(version, settings.get('cgroups')), 'gres_autodetect': autodetect,
            'cluster_name': settings.get('cluster_name') or 'cluster', 'healthcheck': healthcheck,
            'accounting': accounting}


def accounting_plan(settings, controllers, version):
    """Accounting as the plan holds it: None where ``settings['accounting']`` is off, else ``{host, db_name, db_user,
    jobacct_gather, pid_file}``.

    slurmdbd and a local MariaDB run on the primary controller, ``host``, named as ``SlurmctldHost`` names it
    (slurmctld, sacct and sacctmgr on every node resolve it); ``jobacct_gather`` follows the cgroups
    (``jobacct_gather/cgroup`` beside ``proctrack/cgroup``, else ``jobacct_gather/linux``, which reads /proc);
    ``pid_file`` is where the distribution's slurmdbd.service lets slurmdbd write it (Debian 12's unit runs it as root
    and names /run/slurmdbd.pid; the unit Slurm ships from 23.11 runs it as slurm, with /run/slurmdbd its own). The
    password is never here: Ansible prints the plan with every fact it sets.
    """
    if not settings.get('accounting'):
        return None
    try:
        as_slurm = version is not None and version_tuple(version) >= _SLURMDBD_AS_SLURM
    except ValueError:
        as_slurm = False
    return {'host': controllers[0] if controllers else None,
            'db_name': settings.get('accounting_db_name') or 'slurm_acct_db',
            'db_user': settings.get('accounting_db_user') or 'slurm',
            'jobacct_gather': 'jobacct_gather/cgroup' if settings.get('cgroups') else 'jobacct_gather/linux',
            'pid_file': '/run/slurmdbd/slurmdbd.pid' if as_slurm else '/run/slurmdbd.pid'}


def cgroups_usable(facts):
    """Whether a node's cgroups are usable by Slurm: a cgroup v2 tree mounted at /sys/fs/cgroup (the setup facts'
    ``mounts``). A v1 or hybrid tree (the lab's podman nodes) is not: Slurm then tracks processes itself."""
    mounts = (facts or {}).get('mounts') or []
    return any(m.get('mount') == '/sys/fs/cgroup' and m.get('fstype') == 'cgroup2' for m in mounts)


def plan_from_hostvars(hostvars, model, settings):
    """``cluster_plan`` with each compute node's hardware read from its gathered facts (``hostvars[host].ansible_facts``,
    less ``settings['memory_reserved_mb']``), its GPUs' cores from ``gpu_topology`` and the role's
    ``__slurm_cpu_topology`` where both are there, and ``settings['cgroups']`` ``auto`` resolved: usable when every
    compute node has a cgroup v2 tree."""
    compute = list(settings.get('compute') or [])
    facts = dict((host, ((hostvars.get(host) or {}).get('ansible_facts') or {})) for host in compute)
    hardware = dict((host, node_hardware(facts[host], settings.get('memory_reserved_mb') or 0)) for host in compute)
    for host in compute:
        if hardware[host]:
            hardware[host]['gpu_cores'] = node_gpu_cores((facts[host].get('gpu_topology') or {}).get('gpus'),
                                                         (hostvars.get(host) or {}).get('__slurm_cpu_topology'))
    resolved = dict(settings)
    if settings.get('cgroups') in (None, 'auto'):
        resolved['cgroups'] = bool(compute) and all(cgroups_usable(facts[host]) for host in compute)
    else:
        resolved['cgroups'] = settings.get('cgroups') in (True, 'enabled')
    return cluster_plan(model, hardware, resolved)


def _members(label, expression, compute, problems):
    """The nodes a host list names, all of them Slurm nodes; None (with a problem) where it names others."""
    try:
        names = hostlist_expand(expression)
    except ValueError as exc:
        problems.append('%s: %s' % (label, exc))
        return None
    unknown = [name for name in names if name not in compute]
    if unknown:
        problems.append('%s: names %s, not in slurm_compute_group' % (label, hostlist_compress(unknown)))
        return None
    return names


def _partitions(partitions, compute, problems):
    found = []
    for index, partition in enumerate(partitions):
        label = 'slurm_partitions[%d]' % index
        if not isinstance(partition, dict) or not partition.get('name'):
            problems.append('%s: needs a name' % label)
            continue
        label = '%s (%s)' % (label, partition['name'])
        nodes = partition.get('nodes')
        members = compute if nodes in (None, 'ALL') else _members(label, nodes, compute, problems)
        if members is None:
            continue
        found.append({'name': partition['name'], 'nodes': members, 'default': bool(partition.get('default')),
                      'max_time': partition.get('max_time') or 'INFINITE', 'options': partition.get('options') or {}})
    defaults = [p['name'] for p in found if p['default']]
    if len(defaults) > 1:
        problems.append('slurm_partitions: %s are all marked default; Slurm takes one' % ', '.join(defaults))
    return found


def _leaves(leaves, compute, problems):
    found = []
    seen = {}
    for index, leaf in enumerate(leaves):
        label = 'slurm_topology_leaves[%d]' % index
        if not isinstance(leaf, dict) or not leaf.get('name') or not leaf.get('nodes'):
            problems.append('%s: needs a name and its nodes' % label)
            continue
        members = _members('%s (%s)' % (label, leaf['name']), leaf['nodes'], compute, problems)
        if members is None:
            continue
        twice = [name for name in members if name in seen]
        if twice:
            problems.append('%s (%s): %s already hang off %s; a node hangs off one leaf in topology/tree'
                            % (label, leaf['name'], hostlist_compress(twice), seen[twice[0]]))
        for name in members:
            seen.setdefault(name, leaf['name'])
        found.append({'name': leaf['name'], 'nodes': members})
    return found


# --- rendering ----------------------------------------------------------------------------------------------------

_HEADER = ('# Managed by hpcfabric.cluster (role slurm), rendered from the cluster model; edits here are overwritten.\n')


def _require(plan):
    if not isinstance(plan, dict) or plan.get('problems') or 'groups' not in plan:
        raise ValueError('the Slurm plan has problems (%s); nothing is rendered from it'
                         % '; '.join((plan or {}).get('problems') or ['not a plan']))


def _node_line(names, node):
    parts = ['NodeName=%s' % hostlist_compress(names), 'CPUs=%d' % node['cpus']]
    if node['sockets']:
        parts += ['Sockets=%d' % node['sockets'], 'CoresPerSocket=%d' % node['cores_per_socket'],
                  'ThreadsPerCore=%d' % node['threads_per_core']]
    parts.append('RealMemory=%d' % node['real_memory'])
    if node['gpus']:
        parts.append('Gres=gpu:%d' % node['gpus'])
    parts.append('State=UNKNOWN')
    return ' '.join(parts)


def _partition_line(partition, nodes):
    by_name = dict((node['name'], node) for node in nodes)
    members = [by_name[name] for name in partition['nodes']]
    # without a default, a job that asks no memory takes a whole node's (SelectTypeParameters=CR_Core_Memory)
    per_cpu = min(node['real_memory'] // node['cpus'] for node in members)
    parts = ['PartitionName=%s' % partition['name'],
             'Nodes=%s' % ('ALL' if len(members) == len(nodes) else hostlist_compress(partition['nodes'])),
             'Default=%s' % ('YES' if partition['default'] else 'NO'), 'MaxTime=%s' % partition['max_time'],
             'DefMemPerCPU=%d' % per_cpu, 'State=UP']
    parts += ['%s=%s' % (key, value) for key, value in sorted(partition['options'].items())]
    return ' '.join(parts)


def render_slurm_conf(plan, extra=None):
    """``slurm.conf`` of the plan; ``extra`` (``{key: value}``, the site's own settings) goes before the nodes. With
    the plan's ``healthcheck``, slurmd runs that program every ``interval`` seconds on every node, whatever its state
    (``HealthCheckNodeState=ANY``: a drained node must be checked too, or a node the check drained is never resumed)."""
    _require(plan)
    lines = [_HEADER.rstrip('\n'), 'ClusterName=%s' % plan['cluster_name']]
    lines += ['SlurmctldHost=%s' % host for host in plan['controllers']]
    lines += ['SlurmctldParameters=enable_configless', 'AuthType=auth/munge', 'SlurmUser=slurm',
              'SlurmctldPort=6817', 'SlurmdPort=6818',
              'StateSaveLocation=/var/lib/slurm/slurmctld', 'SlurmdSpoolDir=/var/lib/slurm/slurmd',
              'SlurmctldPidFile=/run/slurmctld.pid', 'SlurmdPidFile=/run/slurmd.pid',
              'SlurmctldLogFile=/var/log/slurm/slurmctld.log', 'SlurmdLogFile=/var/log/slurm/slurmd.log',
              # a node that was DOWN comes back when it registers with a valid configuration; a DRAINED one does not
              'ReturnToService=2',
              'SchedulerType=sched/backfill', 'SelectType=select/cons_tres', 'SelectTypeParameters=CR_Core_Memory',
              'MpiDefault=pmix', 'ProctrackType=%s' % plan['plugins']['ProctrackType']]
    if plan['plugins']['TaskPlugin']:
        lines.append('TaskPlugin=%s' % plan['plugins']['TaskPlugin'])
    lines.append('GresTypes=gpu')
    if plan['leaves']:
        lines.append('TopologyPlugin=topology/tree')
    if plan.get('healthcheck'):
        lines += ['HealthCheckProgram=%s' % plan['healthcheck']['program'],
                  'HealthCheckInterval=%d' % plan['healthcheck']['interval'], 'HealthCheckNodeState=ANY']
    lines += _accounting_lines(plan, extra)
    lines += ['%s=%s' % (key, value) for key, value in sorted((extra or {}).items())]
    lines += [_node_line(group['names'], group['node']) for group in plan['groups']]
    lines += [_partition_line(partition, plan['nodes']) for partition in plan['partitions']]
    return '\n'.join(lines) + '\n'


def render_gres_conf(plan):
    """``gres.conf``: explicit ``Name=gpu File=/dev/nvidiaN`` lines per group of identical nodes (each GPU on its own
    line with its ``Cores=`` where they are known), or ``AutoDetect=nvidia`` alone where the plan asks for it.
    Explicit lines and AutoDetect together are what leaves nodes INVAL with fewer GPUs than configured."""
    _require(plan)
    lines = [_HEADER.rstrip('\n')]
    if plan['gres_autodetect']:
        lines.append('AutoDetect=nvidia')
        return '\n'.join(lines) + '\n'
    for group in plan['groups']:
        node = group['node']
        if not node['gpus']:
            continue
        names = hostlist_compress(group['names'])
        cores = node['gpu_cores'] or []
        if len(cores) == node['gpus'] and all(cores):
            lines += ['NodeName=%s Name=gpu File=/dev/nvidia%d Cores=%s' % (names, index, _ranges(core_list))
                      for index, core_list in enumerate(cores)]
        else:
            files = '/dev/nvidia0' if node['gpus'] == 1 else '/dev/nvidia[0-%d]' % (node['gpus'] - 1)
            lines.append('NodeName=%s Name=gpu File=%s' % (names, files))
    return '\n'.join(lines) + '\n'


def render_cgroup_conf(plan):
    """``cgroup.conf`` where the nodes' cgroups are usable (cores, devices and memory constrained), else ''."""
    _require(plan)
    if not plan['cgroups']:
        return ''
    return _HEADER + 'CgroupPlugin=autodetect\nConstrainCores=yes\nConstrainDevices=yes\nConstrainRAMSpace=yes\n'


def render_topology_conf(plan):
    """``topology.conf`` (topology/tree): one line per leaf with its nodes and a spine above every leaf; '' without
    leaves."""
    _require(plan)
    if not plan['leaves']:
        return ''
    lines = [_HEADER.rstrip('\n')]
    lines += ['SwitchName=%s Nodes=%s' % (leaf['name'], hostlist_compress(leaf['nodes'])) for leaf in plan['leaves']]
    lines.append('SwitchName=%s Switches=%s' % (plan['spine'], hostlist_compress(leaf['name'] for leaf in plan['leaves'])))
    return '\n'.join(lines) + '\n'


# --- accounting ---------------------------------------------------------------------------------------------------

def _accounting_lines(plan, extra):
    """slurm.conf's accounting lines: slurmctld sends job records to the slurmdbd on the primary controller, each job's
    usage gathered by the plugin the cgroups allow; on a cluster with GPUs each job's GPUs are recorded too
    (``AccountingStorageTRES=gres/gpu``: Slurm's default TRES have none), unless the site names its own TRES in
    ``extra``. None without accounting: the file stays as it was."""
    accounting = plan.get('accounting')
    if not accounting:
        return []
    lines = ['AccountingStorageType=accounting_storage/slurmdbd', 'AccountingStorageHost=%s' % accounting['host'],
             'JobAcctGatherType=%s' % accounting['jobacct_gather']]
    if any(node['gpus'] for node in plan['nodes']) and 'accountingstoragetres' not in (
            str(key).lower() for key in (extra or {})):
        lines.append('AccountingStorageTRES=gres/gpu')
    return lines


def accounting_name_problem(name, longest):
    """Why ``name`` cannot be the accounting database's name (``longest`` 64) or its user's (32: MariaDB's limits),
    or None. Letters, digits and ``_`` only: the name goes into SQL and slurmdbd.conf unquoted."""
    if not isinstance(name, str) or not re.fullmatch(r'[A-Za-z0-9_]{1,%d}' % longest, name):
        return '%r is not a MariaDB name of letters, digits and _, at most %d characters' % (name, longest)
    return None


def password_problem(password):
    """Why ``password`` cannot be the accounting database's password, or None. The text never quotes it.

    slurmdbd.conf (``StoragePass=``) and MariaDB's option files read it unquoted, and the SQL that sets it has it
    between single quotes: a blank or line break would end it, ``#`` start a comment, a quote, backquote or backslash
    quote or escape what follows. At least ``PASSWORD_MIN`` printable ASCII characters."""
    if password is None or password == '':
        return 'not set; the accounting database needs a password (keep it in Ansible Vault)'
    if not isinstance(password, str):
        return 'must be a string (quote it in YAML)'
    if any(not ('!' <= char <= '~') for char in password):
        return 'has a blank, a line break or a character outside printable ASCII, which slurmdbd.conf cannot carry'
    if any(char in _PASSWORD_FORBIDDEN for char in password):
        return 'has one of # " \' ` \\, which slurmdbd.conf and MariaDB would read as a comment, quoting or an escape'
    if len(password) < PASSWORD_MIN:
        return 'is shorter than %d characters' % PASSWORD_MIN
    return None


def _accounting_of(plan):
    _require(plan)
    accounting = plan.get('accounting')
    if not accounting:
        raise ValueError('the Slurm plan has no accounting (slurm_accounting is off)')
    for name, longest in ((accounting['db_name'], 64), (accounting['db_user'], 32)):
        problem = accounting_name_problem(name, longest)
        if problem:
            raise ValueError(problem)
    return accounting


def _password(password):
    problem = password_problem(password)
    if problem:
        raise ValueError('slurm_accounting_db_password: %s' % problem)
    return password


def render_slurmdbd_conf(plan, password):
    """``slurmdbd.conf`` for the plan's accounting, with ``password`` (never stored in the plan). slurmdbd runs beside
    its MariaDB on the primary controller, so both hosts are ``localhost``: ``DbdHost=localhost`` is taken whatever the
    host calls itself (slurmdbd compares DbdHost with its short and long host names or ``localhost``, and stops when
    none matches: an inventory name that is not the host name would stop it), and slurmdbd still listens on every
    address for slurmctld and the clients, which reach it as ``AccountingStorageHost``. ``StorageHost=localhost`` is
    MariaDB's unix socket. Raises ValueError on a plan without accounting or a password slurmdbd.conf cannot carry."""
    accounting = _accounting_of(plan)
    password = _password(password)
    lines = [_HEADER.rstrip('\n'), 'AuthType=auth/munge', 'DbdHost=localhost', 'SlurmUser=slurm',
             'LogFile=/var/log/slurm/slurmdbd.log', 'PidFile=%s' % accounting['pid_file'],
             'StorageType=accounting_storage/mysql', 'StorageHost=localhost',
             'StorageLoc=%s' % accounting['db_name'], 'StorageUser=%s' % accounting['db_user'],
             'StoragePass=%s' % password]
    return '\n'.join(lines) + '\n'


# what accounting_sql's reads print, one line each: the database, its user, the user's grant on it
_DB_STATE_KEYS = ('database', 'user', 'grant')


def accounting_db_state(text):
    """``{database, user, grant}`` (bools) from what ``accounting_sql(plan)`` printed (``mariadb --batch
    --skip-column-names``: ``database<TAB>1`` ...). Raises ValueError naming the line it cannot read or what is
    missing."""
    state = {}
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2 or fields[0] not in _DB_STATE_KEYS or not fields[1].isdigit():
            raise ValueError('cannot read %r in what MariaDB answered' % line)
        state[fields[0]] = int(fields[1]) > 0
    missing = [key for key in _DB_STATE_KEYS if key not in state]
    if missing:
        raise ValueError('MariaDB answered nothing about the %s' % ', '.join(missing))
    return state


def accounting_sql(plan, found=None, login_ok=False, password=None):
    """The SQL MariaDB's root runs (``mariadb`` over the unix socket, the text on stdin, never in argv) for the
    accounting database.

    Without ``found``: the reads, which print whether the database, its user (``'<user>'@'localhost'``, as slurmdbd
    connects over the socket) and the user's grant on the database exist; exact comparisons, not ``SHOW DATABASES
    LIKE``, where ``_`` is a wildcard. With ``found`` (what the reads printed) and ``login_ok`` (whether the user logged
    in with ``password``): the writes for what is missing - the database, the user with the password, or a new
    password where the user is there and the login failed, the grant - or '' where nothing is."""
    accounting = _accounting_of(plan)
    db, user = accounting['db_name'], accounting['db_user']
    if found is None:
        return ("SELECT 'database', COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '%s';\n"
                "SELECT 'user', COUNT(*) FROM mysql.user WHERE User = '%s' AND Host = 'localhost';\n"
                "SELECT 'grant', COUNT(*) FROM mysql.db WHERE Db = '%s' AND User = '%s' AND Host = 'localhost';\n"
                % (db, user, db, user))
    state = accounting_db_state(found)
    statements = []
    if not state['database']:
        statements.append('CREATE DATABASE IF NOT EXISTS `%s`;' % db)
    if not state['user']:
        statements.append("CREATE USER IF NOT EXISTS '%s'@'localhost' IDENTIFIED BY '%s';"
                          % (user, _password(password)))
    elif not login_ok:
        statements.append("ALTER USER '%s'@'localhost' IDENTIFIED BY '%s';" % (user, _password(password)))
    if not state['grant']:
        statements.append("GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'localhost';" % (db, user))
    return '\n'.join(statements) + '\n' if statements else ''


def hosts_block(hostvars, hosts):
    """``/etc/hosts`` lines ``<address> <name>`` for the Slurm hosts whose ``ansible_host`` is an IP address, so that
    slurmctld, slurmd and srun resolve every node by its Slurm name without DNS."""
    lines = []
    for host in dict.fromkeys(hosts):
        address = str((hostvars.get(host) or {}).get('ansible_host') or '')
        if re.fullmatch(r'\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f:]+:[0-9A-Fa-f:.]*', address):
            lines.append('%s %s' % (address, host))
    return '\n'.join(lines)


# --- changes, keys, read-back -------------------------------------------------------------------------------------

def _settings(text):
    """``{key: [values]}``, ``{node: its node line's other settings}`` of a slurm.conf text (keys case-insensitive, as
    Slurm reads them)."""
    found = {}
    nodes = {}
    for line in (text or '').splitlines():
        line = line.split('#', 1)[0].strip()
        if '=' not in line:
            continue
        key, value = line.split('=', 1)
        if key.lower() == 'nodename':
            for name in hostlist_expand(value.split()[0]):
                nodes[name] = sorted(value.split()[1:])
            continue
        if key.lower() == 'partitionname':
            continue
        found.setdefault(key.lower(), []).append(value.strip())
    return found, nodes


def restart_needed(old_text, new_text):
    """``(restart, reasons)``: whether a slurm.conf change needs slurmctld and slurmd restarted (a setting read only at
    start changed, nodes were added or removed, or a node's CPUs, memory or GPUs changed, which slurmd reads with its
    gres.conf at start) or only ``scontrol reconfigure`` (anything else: partitions, the site's own settings). A first
    file (``old_text`` empty) is a start, which restarts."""
    if not (old_text or '').strip():
        return True, ['no slurm.conf before']
    old, old_nodes = _settings(old_text)
    new, new_nodes = _settings(new_text)
    reasons = ['%s changed' % key for key in _RESTART_KEYS if old.get(key.lower()) != new.get(key.lower())]
    if set(old_nodes) != set(new_nodes):
        reasons.append('nodes added or removed (%s)' % hostlist_compress(sorted(set(old_nodes) ^ set(new_nodes))))
    changed = [name for name in new_nodes if name in old_nodes and old_nodes[name] != new_nodes[name]]
    if changed:
        reasons.append('the hardware of %s changed' % hostlist_compress(changed))
    return bool(reasons), reasons


def munge_key_action(reference, node, existed_before, repair):
    """What to do with a node's munge key: ``keep`` (it is the controller's), ``install`` (the package made a fresh key
    in this run, or there is none), ``repair`` (a key that differs, replaced because ``slurm_repair_munge_key``
    allows it) or ``refuse`` (a key that differs on a node where it was there before this run: another cluster's key,
    or one changed by hand). ``reference`` and ``node`` are the keys' checksums (``node`` None: no key)."""
    if node == reference:
        return 'keep'
    if node is None or not existed_before:
        return 'install'
    return 'repair' if repair else 'refuse'


def parse_scontrol_nodes(text):
    """``{node: {key: value}}`` from ``scontrol show node`` (``-o`` one line per node, or the multi-line form with
    records separated by blank lines). Values keep their spaces (``OS=Linux 6.1.0-28-amd64 #1 SMP ...``,
    ``Reason=...``)."""
    records = []
    for line in (text or '').splitlines():
        if line.startswith('NodeName='):
            records.append(line)
        elif line.strip() and records:
            records[-1] += ' ' + line.strip()
    nodes = {}
    for record in records:
        fields = {}
        marks = list(re.finditer(r'(?:^|\s)([A-Za-z][A-Za-z_]*)=', record))
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(record)
            fields[mark.group(1)] = record[mark.end():end].strip()
        nodes[fields['NodeName']] = fields
    return nodes


def node_readback_problems(plan, nodes):
    """What ``scontrol show node`` (parsed) says against the plan: a node missing, not in a state that takes jobs, or
    with other CPUs, memory or GPUs than configured."""
    problems = []
    for node in plan['nodes']:
        seen = nodes.get(node['name'])
        if seen is None:
            problems.append('%s: not known to slurmctld' % node['name'])
            continue
        state = seen.get('State', '')
        flags = state.split('+')
        if flags[0].rstrip('*') not in _USABLE_STATES or len(flags) > 1 or state.endswith('*'):
            reason = seen.get('Reason')
            problems.append('%s: state %s%s' % (node['name'], state, ' (%s)' % reason if reason else ''))
        if seen.get('CPUTot') != str(node['cpus']):
            problems.append('%s: %s CPUs, %d configured' % (node['name'], seen.get('CPUTot'), node['cpus']))
        if seen.get('RealMemory') != str(node['real_memory']):
            problems.append('%s: RealMemory %s, %d configured' % (node['name'], seen.get('RealMemory'), node['real_memory']))
        gres = seen.get('Gres', '(null)')
        expected = 'gpu:%d' % node['gpus'] if node['gpus'] else '(null)'
        if gres.split('(')[0] != expected.split('(')[0] and gres != expected:
            problems.append('%s: Gres %s, %s configured' % (node['name'], gres, expected))
    return problems


# --- drain and resume ---------------------------------------------------------------------------------------------

def drain_reason(finding):
    """The drain reason for a finding: the prefix, the finding on one line without quotes, cut to ``REASON_MAX``."""
    text = ' '.join(str(finding).replace('"', "'").split())
    return ('%s %s' % (REASON_PREFIX, text))[:REASON_MAX]


def drain_resume_actions(states, tested, findings):
    """What the validation does to Slurm nodes after a run.

    ``states``: ``{node: {'State': ..., 'Reason': ...}}`` (``parse_scontrol_nodes``); ``tested``: the nodes the run
    judged; ``findings``: ``{node: finding text}`` for the nodes it names. Returns ``{drain: [{node, reason}], resume:
    [node], kept: [{node, reason}]}``:

    - a named node is drained with ``hpcfabric: <finding>``, unless someone else drained it (their reason stays:
      ``kept``) or it is drained already with the same reason;
    - a tested node that passed is resumed only when its drain reason starts with the prefix;
    - a node drained for another reason, or not tested, is never touched.
    """
    drain, resume, kept = [], [], []
    for node in tested:
        state = states.get(node) or {}
        reason = state.get('Reason') or ''
        drained = is_drained(state)
        out_of_service = drained or is_down(state)
        if node in findings:
            wanted = drain_reason(findings[node])
            if out_of_service and not _ours(reason):
                kept.append({'node': node, 'reason': reason})
            elif not (drained and own_reason(reason) == wanted):
                drain.append({'node': node, 'reason': wanted})
        elif out_of_service and _ours(reason):
            resume.append(node)
    return {'drain': drain, 'resume': resume, 'kept': kept}


def is_drained(state):
    """Whether a node (``parse_scontrol_nodes``) is drained or draining (the health check reads it too)."""
    flags = (state.get('State') or '').split('+')
    return any(flag.rstrip('*') in ('DRAIN', 'DRAINED', 'DRAINING') for flag in flags)


def is_down(state):
    """Whether a node's state is DOWN, responding or not (``DOWN*``)."""
    return (state.get('State') or '').split('+')[0].rstrip('*') == 'DOWN'


def _ours(reason):
    """Whether a drain reason is the validation's own: the prefix, and not the node health check's."""
    return reason.startswith(REASON_PREFIX) and not reason.startswith(HEALTH_PREFIX)


# scontrol shows a reason with who set it and when after it: "hpcfabric: health: ... [root@2025-01-01T00:00:00]"
_REASON_STAMP = re.compile(r' \[[^\[\]]*@[^\[\]]*\]$')


def own_reason(reason):
    """A reason as it was written, without the `` [user@time]`` scontrol shows after it (the health check reads it
    too); a reason of its own with brackets in it stays whole."""
    return _REASON_STAMP.sub('', (reason or '').strip())


def validation_start(states, hosts, gpu_counts):
    """Which of ``hosts`` the validation's Slurm jobs run on, before any job.

    ``states``: ``parse_scontrol_nodes``; ``gpu_counts``: each host's GPUs in the cluster model. Returns ``{test,
    skip, held, gpus_per_node, problems}``:

    - ``skip`` (``[{node, reason}]``): down, not responding, or drained for a reason that is not the validation's
      (the node health check's ``hpcfabric: health:`` is not) - no job can start there, and someone else's drain is
      never touched; the validation runs without them;
    - ``held`` (``[{node, reason}]``): drained by an earlier validation (the reason starts with the prefix): tested
      again, resumed for this run inside its reservation, which keeps users' jobs off; ``validation_end`` says what
      becomes of them;
    - ``test``: the nodes the jobs run on, ``held`` among them, in ``hosts`` order;
    - ``gpus_per_node``: the GPUs every srun asks for on each node (all of them: one rank per GPU, the wrapper picks
      each rank's); ``problems``: hosts Slurm does not know, nodes with other GPU counts, nothing left to test.
    """
    test, skip, held, problems = [], [], [], []
    for host in hosts:
        state = states.get(host)
        if state is None:
            problems.append('%s: not a node slurmctld knows (scontrol show node)' % host)
            continue
        text = state.get('State', '')
        reason = state.get('Reason') or ''
        # not responding: a '*' after the state (older Slurm), or the flag (21.08 on)
        if is_down(state) or '*' in text or 'NOT_RESPONDING' in text.split('+'):
            skip.append({'node': host, 'reason': 'state %s%s' % (text, ' (%s)' % reason if reason else '')})
        elif is_drained(state) and not _ours(reason):
            skip.append({'node': host, 'reason': 'drained: %s' % reason})
        else:
            if is_drained(state):
                held.append({'node': host, 'reason': own_reason(reason)})
            test.append(host)
    counts = sorted(set(int(gpu_counts.get(host) or 0) for host in test))
    if len(counts) > 1:
        problems.append('the nodes have %s GPUs: one srun asks every node for the same count; validate them apart '
                        '(validate_group, --limit)' % ' or '.join(str(count) for count in counts))
    if not test and not problems:
        problems.append('no node to test: %s' % '; '.join('%s %s' % (item['node'], item['reason']) for item in skip))
    return {'test': test, 'skip': skip, 'held': held, 'gpus_per_node': counts[-1] if counts else 0,
            'problems': problems}


def _finding(node):
    """A FAIL node's finding, for its drain reason: the first reason that fails it, with where it comes from."""
    reason = next(item for item in node['reasons'] if item['verdict'] == 'FAIL')
    return '%s: %s' % (reason['source'], reason['reason'])


def validation_end(states, held, verdicts):
    """What the validation does to Slurm's nodes once its report is written.

    ``states``: ``parse_scontrol_nodes`` as read before the run; ``held``: ``validation_start``'s; ``verdicts``: the
    report's ``verdicts.nodes`` (``[{host, verdict, reasons}]``). A FAIL node is drained with its finding; a PASS node
    that an earlier validation drained is resumed (``drain_resume_actions``); a held node neither judged FAIL nor PASS
    (UNKNOWN, WARN) goes back to its drain. Returns ``{drain, resume, kept, apply}``: ``apply``, ``[{node,
    reason}]``, is every drain to write now - the new ones and the held nodes that stay drained, which the run
    resumed.
    """
    judged = [node['host'] for node in verdicts if node['verdict'] in ('PASS', 'FAIL')]
    findings = dict((node['host'], _finding(node)) for node in verdicts if node['verdict'] == 'FAIL')
    actions = drain_resume_actions(states, judged, findings)
    apply = list(actions['drain'])
    drained = set(item['node'] for item in apply)
    for item in held:
        if item['node'] in findings and item['node'] not in drained:
            apply.append({'node': item['node'], 'reason': drain_reason(findings[item['node']])})
        elif item['node'] not in findings and item['node'] not in actions['resume']:
            apply.append(item)
    return dict(actions, apply=apply)
