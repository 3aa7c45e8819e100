# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""No inventory value reaches a shell: every task file of the roles and playbooks, read as data.

A templated value inside a shell string (``shell``, ``raw``, ``command: "... {{ x }}"``, ``sh -c "... {{ x }}"``)
is parsed again by the shell or by shlex: a blank splits it, a quote or ``;`` changes the command. Commands are
therefore argv lists, and a script that needs a pipe or a redirection is a fixed text that takes the values as its
positional arguments (``argv: [sh, -c, 'fixed "$1"', sh, "{{ value }}"]``).

The second half checks that the tasks which pass a password or a download proxy's settings, or register a switch's
configuration, are ``no_log: true`` (test_switch_qos_apply.py and test_mpi_source.py run them and read the output).
"""
from __future__ import annotations
import re
from pathlib import Path, PurePosixPath

import pytest
import yaml

from checkout import ROOT

TEMPLATED = re.compile(r'{{|{%')
# script: its free-form text (the script and its arguments) is run by the node's shell
SHELL_MODULES = {f'{ns}{name}' for ns in ('', 'ansible.builtin.', 'ansible.legacy.') for name in ('shell', 'raw', 'script')}
COMMAND_MODULES = {f'{ns}command' for ns in ('', 'ansible.builtin.', 'ansible.legacy.')}
# programs whose -c (or -lc, -ec, ...) argument is code: a template there is parsed as code
INTERPRETERS = re.compile(r'^(sh|bash|dash|ksh|zsh|su|python[0-9.]*)$')
SCRIPT_OPTION = re.compile(r'^-[a-z]*c$')
# the keys under which a play or a block holds tasks
TASK_LISTS = ('tasks', 'pre_tasks', 'post_tasks', 'handlers', 'block', 'rescue', 'always')


def yaml_files():
    """Every YAML file of the roles and playbooks, and the root site.yml."""
    files = [*sorted((ROOT / 'roles').rglob('*.yml')), *sorted((ROOT / 'playbooks').rglob('*.yml')), ROOT / 'site.yml']
    return [f for f in files if f.is_file()]


def task_files():
    """The files whose documents are task lists or plays (not vars, defaults, meta or templates)."""
    for f in yaml_files():
        parts = f.relative_to(ROOT).parts
        if parts[0] != 'roles' or parts[2] in ('tasks', 'handlers'):
            yield f


def tasks_of(node, no_log=False):
    """``(task, no_log)`` for every task of a task list or a list of plays, through blocks, rescue and always, depth
    first; ``no_log`` is the task's own, else the nearest enclosing block's or play's."""
    for item in node if isinstance(node, list) else []:
        if not isinstance(item, dict):
            continue
        item_no_log = item.get('no_log', no_log)
        nested = [item[k] for k in TASK_LISTS if isinstance(item.get(k), list)]
        if 'hosts' not in item and 'import_playbook' not in item and not nested:
            yield item, item_no_log
        for child in nested:
            yield from tasks_of(child, item_no_log)


def lists_in(node):
    """Every list anywhere in a YAML document (vars, argv, loops, ...)."""
    if isinstance(node, list):
        yield node
        for child in node:
            yield from lists_in(child)
    elif isinstance(node, dict):
        for child in node.values():
            yield from lists_in(child)


def argv_problems(argv):
    """Why an argv list would let a shell (or su, or python -c) parse a templated value; empty when it does not."""
    words = [str(w) for w in argv]
    problems = []
    for i, word in enumerate(words[:-1]):
        if not SCRIPT_OPTION.match(word):
            continue
        interpreters = [p for p in (PurePosixPath(w).name for w in words[:i]) if INTERPRETERS.match(p)]
        if not interpreters:
            continue
        if 'su' in interpreters:
            problems.append('su ... -c runs a command string as another user: use become_user and argv')
        elif TEMPLATED.search(words[i + 1]):
            problems.append(f'{interpreters[-1]} {word} script contains a template: pass the value as a positional '
                            'argument of a fixed script')
    return problems


def command_problems(module, args):
    """Why a shell, raw or command task's arguments are (or may be) a string a shell or shlex parses again."""
    if isinstance(args, str):
        args = {'cmd': args}
    if not isinstance(args, dict):
        return []
    problems = []
    cmd = args.get('cmd', args.get('_raw_params'))
    if isinstance(cmd, str) and TEMPLATED.search(cmd):
        what = 'shell string' if module in SHELL_MODULES else 'command string (split by shlex)'
        problems.append(f'{module}: {what} contains a template: use argv')
    argv = args.get('argv')
    if isinstance(argv, list):
        problems += argv_problems(argv)
    elif isinstance(argv, str) and re.search(r'''['"]-[a-z]*c['"]''', argv):
        # a script inside a Jinja expression cannot be read here: keep it a literal list element
        problems.append('argv built by a template holds a -c script: write the script as a literal list element')
    return problems


def task_problems(task):
    problems = []
    for module in SHELL_MODULES | COMMAND_MODULES:
        if module in task:
            args = task[module]
            if isinstance(task.get('args'), dict):
                # the older form: free-form text (or nothing) beside the task's args
                args = dict(task['args'], **(args if isinstance(args, dict) else {'cmd': args} if args else {}))
            problems += command_problems(module, args)
    return problems


def shell_string_problems(files):
    """``file: task name: problem`` for every shell string of the given files, then every argv list of any kind
    (in vars, defaults, loops) that hands a templated script to an interpreter."""
    found = []
    with_tasks = set(task_files())
    for f in files:
        rel = f.relative_to(ROOT)
        data = yaml.safe_load(f.read_text())
        if f in with_tasks:
            for task, _no_log in tasks_of(data):
                found += [f'{rel}: {task.get("name", "(unnamed)")}: {p}' for p in task_problems(task)]
        for argv in lists_in(data):
            found += [f'{rel}: {p}' for p in argv_problems(argv)]
    return sorted(set(found))


def test_no_task_builds_a_shell_string_from_values():
    problems = shell_string_problems(yaml_files())
    assert not problems, '\n'.join(problems)


# what the check above must catch, written as the roles once had it
@pytest.mark.parametrize('task, expected', [
    ({'name': 'Configure', 'ansible.builtin.shell': {'cmd': './configure {{ flags }} > log', 'chdir': '/b'}},
     'shell string'),
    ({'name': 'Raw', 'raw': 'echo {{ x }}'}, 'shell string'),
    ({'name': 'Up', 'ansible.builtin.command': 'nmcli connection up {{ item.name }}'}, 'command string'),
    ({'name': 'Up', 'ansible.builtin.command': {'cmd': 'ip link show {{ item }}'}}, 'command string'),
    ({'name': 'Up', 'command': None, 'args': {'cmd': 'ip link show {{ item }}'}}, 'command string'),
    ({'name': 'Run', 'ansible.builtin.command': {'argv': ['bash', '-lc', 'make -j{{ n }}']}}, 'bash -lc script'),
    ({'name': 'Run', 'ansible.builtin.command': {'argv': ['env', '-i', '/bin/sh', '-c', 'cd {{ d }}']}},
     'sh -c script'),
    ({'name': 'Su', 'ansible.builtin.command': {'argv': ['su', '-', 'mpiuser', '-c', 'mpirun']}}, 'su ... -c'),
    ({'name': 'Hidden', 'ansible.builtin.command': {'argv': "{{ ['sh', '-c', script] }}"}}, 'literal list element'),
])
def test_the_check_finds_shell_strings(task, expected):
    problems = task_problems(task)
    assert len(problems) == 1 and expected in problems[0], problems


@pytest.mark.parametrize('task', [
    {'name': 'Fixed', 'ansible.builtin.shell': 'set -o pipefail; ls /sys/class/net | wc -l'},
    {'name': 'Argv', 'ansible.builtin.command': {'argv': ['ip', 'link', 'show', '{{ item }}']}},
    {'name': 'Positional', 'ansible.builtin.command': {'argv': ['sh', '-c', 'exec "$@" > log', 'sh', '{{ cmd }}']}},
    {'name': 'Not a shell', 'ansible.builtin.command': {'argv': ['ping', '-c', '{{ count }}', 'node01']}},
    {'name': 'Template argv', 'ansible.builtin.command': {'argv': "{{ ['mpirun'] + extra }}"}},
    {'name': 'User shell', 'ansible.builtin.user': {'name': 'mpi', 'shell': '{{ login_shell }}'}},
])
def test_the_check_leaves_argv_alone(task):
    assert not task_problems(task)


def test_tasks_are_found_in_blocks_and_plays():
    play = [{'hosts': 'all', 'tasks': [{'block': [{'name': 'Inner', 'raw': '{{ x }}'}],
                                        'rescue': [{'name': 'Rescue', 'raw': '{{ y }}'}]}]}]
    assert [t['name'] for t, _no_log in tasks_of(play)] == ['Inner', 'Rescue']


# --- secrets -----------------------------------------------------------------------------------------------------
# a task passes a secret when a module argument of its is a password, or its environment a download proxy's settings
# (http_proxy=http://user:pass@proxy; the pip environment of the bench_env role holds them). no_log keeps the module's
# arguments and result out of the output; ansible-core still prints a task's environment at -vvv (the mpi role's
# argument spec says so).
SECRET_ARGS = ('password', 'url_password')
PROXY_ENVIRONMENT = re.compile(r'\bmpi_download_environment\b|pip_env|proxy', re.IGNORECASE)
# modules that talk to a switch: what they register is (part of) its configuration. Not arista.eos.eos_config: it
# answers with the lines it sends and its session's diff, which check mode and --diff are there to show
SWITCH_TALK = {f'ansible.builtin.{m}' for m in ('uri', 'command')} | {'arista.eos.eos_command'}


def module_of(task):
    """The task's module name and arguments (the first key that is not a task keyword), or (None, None)."""
    for key, value in task.items():
        if '.' in key or key in SHELL_MODULES | COMMAND_MODULES:
            return key, value
    return None, None


def secret_problems(rel, task, no_log):
    """Why a task would print a password, a proxy's settings or a switch's configuration; empty when it would not."""
    module, args = module_of(task)
    why = []
    if isinstance(args, dict) and any(args.get(k) for k in SECRET_ARGS):
        why.append('passes a password')
    if PROXY_ENVIRONMENT.search(str(task.get('environment', ''))):
        why.append("runs with the download proxy's settings")
    if rel.parts[:2] == ('roles', 'switch_qos') and module in SWITCH_TALK and task.get('register'):
        why.append("registers the switch's answer")
    return [] if no_log is True or not why else [f'{" and ".join(why)} without no_log: true']


def secret_task_problems(files):
    found = []
    for f in files:
        rel = f.relative_to(ROOT)
        for task, no_log in tasks_of(yaml.safe_load(f.read_text())):
            found += [f'{rel}: {task.get("name", "(unnamed)")}: {p}' for p in secret_problems(rel, task, no_log)]
    return found


def test_tasks_that_handle_secrets_are_no_log():
    problems = secret_task_problems(task_files())
    assert not problems, '\n'.join(problems)


SWITCH_TASKS = Path('roles/switch_qos/tasks/apply_sonic.yml')


@pytest.mark.parametrize('rel, task, no_log, expected', [
    (Path('roles/mpi/tasks/fetch.yml'),
     {'ansible.builtin.get_url': {'url': 'u'}, 'environment': '{{ mpi_download_environment }}'}, False,
     "the download proxy's settings"),
    (Path('roles/bench_env/tasks/venv.yml'),
     {'ansible.builtin.pip': {'name': ['cupy-cuda12x']}, 'environment': '{{ __bench_env_pip_env }}'}, False,
     "the download proxy's settings"),
    (Path('roles/x/tasks/main.yml'), {'ansible.builtin.uri': {'url': 'u', 'password': '{{ pw }}'}}, False, 'a password'),
    (Path('roles/x/tasks/main.yml'), {'ansible.builtin.uri': {'url': 'u', 'url_password': '{{ pw }}'}}, 'false',
     'a password'),
    (SWITCH_TASKS, {'ansible.builtin.command': {'argv': ['show', 'runningconfiguration', 'all']}, 'register': 'r'},
     False, "registers the switch's answer"),
    (Path('roles/switch_qos/tasks/apply_eos.yml'),
     {'arista.eos.eos_command': {'commands': 'show running-config'}, 'register': 'r'}, False, "registers the switch's answer"),
])
def test_the_check_finds_secrets_that_would_be_printed(rel, task, no_log, expected):
    problems = secret_problems(rel, task, no_log)
    assert len(problems) == 1 and expected in problems[0], problems


def test_no_log_is_inherited_from_blocks():
    tasks = [{'name': 'Talk to the switch', 'no_log': True, 'block': [
        {'name': 'Read', 'ansible.builtin.uri': {'url': 'u', 'password': '{{ pw }}'}, 'register': 'r'}],
        'rescue': [{'name': 'Say why', 'ansible.builtin.fail': {'msg': '{{ ansible_failed_result.msg }}'},
                    'no_log': False}]}]
    assert [(t['name'], no_log) for t, no_log in tasks_of(tasks)] == [('Read', True), ('Say why', False)]
    assert not secret_problems(SWITCH_TASKS, *next(tasks_of(tasks)))
