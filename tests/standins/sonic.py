# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""TEST ONLY: a stand-in for a SONiC switch's ``show``, ``config`` and ``sonic-db-cli`` commands.

No SONiC switch can be had here, so the switch_qos role's SONiC path runs against this: ``show``, ``config`` and
``sonic-db-cli`` are wrappers that run ``python3 sonic.py <command> ...``, on a lab machine reached over SSH or first
on PATH in a test. CONFIG_DB is a JSON file instead of redis. It is not SONiC: no YANG models, no
orchestration agent, a handful of commands; never install it on a real switch.

    show runningconfiguration all         CONFIG_DB as JSON
    show version                          says what this is
    config apply-patch [--dry-run] FILE   applies an RFC 6902 patch (add, replace, remove) to CONFIG_DB; refuses a
                                          patch that adds a PORT the switch does not have or leaves a path missing,
                                          as the YANG validation would
    config save -y                        CONFIG_DB to config_db.json (the startup configuration)
    config reload -y                      config_db.json back to CONFIG_DB
    config qos reload                     the image's default QoS tables (DSCP 26 to TC 1), wiping the role's edits
    sonic-db-cli CONFIG_DB hset 'TABLE|KEY' FIELD VALUE [FIELD VALUE ...] / hget / hgetall / hdel
    sonic.py init [--hostname NAME] [--ports N]   a fresh switch: N ports (Ethernet0, Ethernet4, ...) at MTU 9100,
                                          the image's default QoS tables, a TACACS key (the secret the role must not print)

State lives in SONIC_STANDIN_DIR (default /etc/sonic): running.json (CONFIG_DB), config_db.json (saved), pushes.jsonl
(one JSON line per change: the command and, for apply-patch, the patch), and knobs: a file ``refuse`` makes
apply-patch fail as an invalid patch does, ``require-root`` makes apply-patch and save refuse a caller that is not root
(as SONiC's do).
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import sys

STATE = os.environ.get('SONIC_STANDIN_DIR', '/etc/sonic')
RUNNING = os.path.join(STATE, 'running.json')
SAVED = os.path.join(STATE, 'config_db.json')
PUSHES = os.path.join(STATE, 'pushes.jsonl')
QOS_TABLES = ('DSCP_TO_TC_MAP', 'TC_TO_PRIORITY_GROUP_MAP', 'TC_TO_QUEUE_MAP', 'PFC_PRIORITY_TO_QUEUE_MAP',
              'PORT_QOS_MAP', 'QUEUE', 'SCHEDULER', 'WRED_PROFILE')


class Refused(Exception):
    pass


def load():
    try:
        with open(RUNNING) as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise Refused('Error: cannot read CONFIG_DB (%s): is redis running?' % exc)


def store(db, path=RUNNING):
    part = path + '.part'
    with open(part, 'w') as handle:
        json.dump(db, handle, indent=4, sort_keys=True)
        handle.write('\n')
    os.replace(part, path)


def record(entry):
    with open(PUSHES, 'a') as handle:
        handle.write(json.dumps(entry, sort_keys=True) + '\n')


def require_root():
    if os.path.exists(os.path.join(STATE, 'require-root')) and os.geteuid() != 0:
        raise Refused('Root privileges are required for this operation')


def image_qos(ports):
    """The QoS tables a SONiC image's templates write (`config qos reload`): DSCP 26 goes to TC 1, PFC on 3 and 4."""
    dscp = dict((str(value), '1') for value in range(64))
    dscp.update({'3': '3', '4': '4', '8': '0', '46': '5', '48': '6'})
    identity = dict((str(tc), str(tc)) for tc in range(8))
    return {
        'DSCP_TO_TC_MAP': {'AZURE': dscp},
        'TC_TO_PRIORITY_GROUP_MAP': {'AZURE': dict((str(tc), '0') for tc in range(8))},
        'TC_TO_QUEUE_MAP': {'AZURE': identity},
        'PFC_PRIORITY_TO_QUEUE_MAP': {'AZURE': dict(identity)},
        'PORT_QOS_MAP': dict((port, {'dscp_to_tc_map': 'AZURE', 'tc_to_queue_map': 'AZURE', 'tc_to_pg_map': 'AZURE',
                                     'pfc_to_queue_map': 'AZURE', 'pfc_enable': '3,4'}) for port in ports),
        'SCHEDULER': {'scheduler.0': {'type': 'DWRR', 'weight': '14'}, 'scheduler.1': {'type': 'DWRR', 'weight': '15'}},
        'WRED_PROFILE': {'AZURE_LOSSLESS': {'ecn': 'ecn_all', 'green_min_threshold': '1048576',
                                            'green_max_threshold': '2097152', 'green_drop_probability': '5',
                                            'wred_green_enable': 'true'}},
        'QUEUE': dict(('%s|%d' % (port, tc), {'scheduler': 'scheduler.1' if tc in (3, 4) else 'scheduler.0'})
                      for port in ports for tc in range(7)),
    }


# --- JSON patch ----------------------------------------------------------------------------------------------------

def _tokens(pointer):
    if not pointer.startswith('/'):
        raise Refused('Error: %r is not a JSON pointer' % pointer)
    return [part.replace('~1', '/').replace('~0', '~') for part in pointer[1:].split('/')]


def apply_patch(db, ops):
    db = copy.deepcopy(db)
    ports = set(db.get('PORT', {}))
    for op in ops:
        parts = _tokens(op.get('path', ''))
        parent = db
        for part in parts[:-1]:
            if not isinstance(parent, dict) or part not in parent:
                raise Refused('Error: Given patch will produce invalid config. Path %s does not exist' % op['path'])
            parent = parent[part]
        leaf = parts[-1]
        if op.get('op') in ('add', 'replace'):
            if op['op'] == 'replace' and leaf not in parent:
                raise Refused('Error: Given patch will produce invalid config. Cannot replace missing %s' % op['path'])
            parent[leaf] = copy.deepcopy(op['value'])
        elif op.get('op') == 'remove':
            if leaf not in parent:
                raise Refused('Error: Given patch will produce invalid config. Cannot remove missing %s' % op['path'])
            del parent[leaf]
        else:
            raise Refused('Error: unsupported patch operation %r' % op.get('op'))
    extra = sorted(set(db.get('PORT', {})) - ports)
    if extra:
        raise Refused('Error: Given patch will produce invalid config. PORT %s: no such port on this switch (lanes missing)'
                      % ', '.join(extra))
    return db


# --- commands ------------------------------------------------------------------------------------------------------

def cmd_show(args):
    if args == ['runningconfiguration', 'all']:
        print(json.dumps(load(), indent=4, sort_keys=True))
    elif args == ['version']:
        print('SONiC Software Version: SONiC.TEST-standin (tests/standins/sonic.py; not a switch)')
    else:
        raise Refused('Error: show %s: not in this stand-in' % ' '.join(args))


def cmd_config(args):
    if args[:1] == ['apply-patch']:
        dry = any(arg in ('-n', '--dry-run') for arg in args[1:])
        files = [arg for arg in args[1:] if not arg.startswith('-')]
        if len(files) != 1:
            raise Refused('Usage: config apply-patch [--dry-run] PATCH_FILE_PATH')
        if not dry:
            require_root()
        with open(files[0]) as handle:
            ops = json.load(handle)
        db = load()
        # the real command prints the configuration it starts from and the patch: the role keeps them out of its output
        print('Patch Applier: localhost: Patch application starting.')
        print('Patch Applier: localhost: Source config:\n%s' % json.dumps(db, sort_keys=True))
        if os.path.exists(os.path.join(STATE, 'refuse')):
            raise Refused('Error: Given patch will produce invalid config. (TEST stand-in: refuse file present)')
        patched = apply_patch(db, ops)
        if not dry:
            store(patched)
            record({'command': 'config apply-patch', 'patch': ops})
        print('Patch applied successfully.')
    elif args[:1] == ['save']:
        require_root()
        shutil.copyfile(RUNNING, SAVED)
        record({'command': 'config save'})
        print('Running command: /usr/local/bin/sonic-cfggen -d --print-data > %s' % SAVED)
    elif args[:1] == ['reload']:
        require_root()
        shutil.copyfile(SAVED, RUNNING)
        record({'command': 'config reload'})
    elif args == ['qos', 'reload']:
        require_root()
        db = load()
        for table in QOS_TABLES:
            db.pop(table, None)
        db.update(image_qos(sorted(db.get('PORT', {}))))
        store(db)
        record({'command': 'config qos reload'})
    else:
        raise Refused('Error: config %s: not in this stand-in' % ' '.join(args))


def cmd_db(args):
    if args[:1] != ['CONFIG_DB'] or len(args) < 3:
        raise Refused('Usage: sonic-db-cli CONFIG_DB hset|hget|hgetall|hdel TABLE|KEY [FIELD [VALUE] ...]')
    verb, key, rest = args[1], args[2], args[3:]
    table, _sep, name = key.partition('|')
    db = load()
    entry = db.get(table, {}).get(name)
    if verb == 'hgetall':
        print(json.dumps(entry or {}, sort_keys=True))
    elif verb == 'hget':
        value = (entry or {}).get(rest[0]) if rest else None
        if value is not None:
            print(value)
    elif verb == 'hset' and rest and len(rest) % 2 == 0:
        db.setdefault(table, {}).setdefault(name, {}).update(zip(rest[::2], rest[1::2]))
        store(db)
        record({'command': 'sonic-db-cli hset', 'key': key, 'fields': dict(zip(rest[::2], rest[1::2]))})
        print(len(rest) // 2)
    elif verb == 'hdel' and rest and entry is not None:
        for field in rest:
            entry.pop(field, None)
        store(db)
        record({'command': 'sonic-db-cli hdel', 'key': key, 'fields': rest})
        print(len(rest))
    else:
        raise Refused('Error: sonic-db-cli %s: not in this stand-in' % ' '.join(args))


def cmd_init(args):
    hostname, count = 'switch01', 8
    while args:
        flag, value, args = args[0], args[1], args[2:]
        if flag == '--hostname':
            hostname = value
        elif flag == '--ports':
            count = int(value)
    ports = ['Ethernet%d' % (4 * index) for index in range(count)]
    db = {
        'DEVICE_METADATA': {'localhost': {'hostname': hostname, 'hwsku': 'TEST-standin', 'platform': 'x86_64-test_standin',
                                          'type': 'LeafRouter', 'mac': '02:00:00:00:00:01'}},
        'PORT': dict((port, {'lanes': ','.join(str(4 * index + lane) for lane in range(4)), 'mtu': '9100',
                             'speed': '400000', 'admin_status': 'up', 'alias': 'etp%d' % (index + 1)})
                     for index, port in enumerate(ports)),
        'TACPLUS': {'global': {'auth_type': 'login', 'passkey': 'TEST-standin-tacacs-key'}},
    }
    db.update(image_qos(ports))
    os.makedirs(STATE, exist_ok=True)
    store(db)
    store(db, SAVED)
    print('TEST SONiC stand-in %s: %d ports, CONFIG_DB in %s' % (hostname, count, RUNNING))


COMMANDS = {'show': cmd_show, 'config': cmd_config, 'sonic-db-cli': cmd_db, 'init': cmd_init}


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print('usage: sonic.py show|config|sonic-db-cli|init ...', file=sys.stderr)
        return 2
    try:
        COMMANDS[argv[1]](argv[2:])
    except Refused as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
