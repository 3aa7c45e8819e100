# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The GPU health chain as the validate role runs it: gpu_health_facts on each node, its registered result through
Ansible's JSON, then the gpu_health_findings filter on every node's result at once.

The unit tests (tests/unit/plugins/module_utils/test_gpu_health.py) hand the parser's dicts straight to the findings;
here the findings read what the module really returns - after the module's JSON, where ``links: {3: 'inactive'}``
arrives as ``{'3': 'inactive'}``. The hosts are this machine (local connection), each reading recorded outputs through
the module's ``*_output`` parameters. The role's own expressions are taken from its files (``__validate_health_by_host``
in roles/validate/vars/main.yml, the "Judge every node's GPU and link health" task of tasks/preflight.yml), so the test
follows the role when they change.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

NVLINK = ROOT / 'tests' / 'unit' / 'fixtures' / 'nvidia-smi-nvlink'
ROLE = ROOT / 'roles' / 'validate'
JUDGE_TASK = "Judge every node's GPU and link health"


def role_health_steps():
    """The role's ``__validate_health_by_host`` expression and its task that applies the filter, as the role has them."""
    by_host = yaml.safe_load((ROLE / 'vars' / 'main.yml').read_text())['__validate_health_by_host']
    judge = next(task for task in yaml.safe_load((ROLE / 'tasks' / 'preflight.yml').read_text())
                 if task.get('name') == JUDGE_TASK)
    return by_host, judge


def derived_one_link_down():
    """The recorded H100 PCIe output with GPU 1's Link 0 turned ``<inactive>``: a link down where its peer's is up.

    Derived here, not recorded (no public output of one bridged link down was found); everything else is the
    recorded text.
    """
    text = (NVLINK / 'h100-pcie-bridged-12-of-18.txt').read_text()
    gpu1 = text.index('GPU 1:')
    head, tail = text[:gpu1], text[gpu1:]
    changed = tail.replace('Link 0: 26.562 GB/s', 'Link 0: <inactive>', 1)
    assert changed != tail
    return head + changed


@pytest.fixture
def health_play(tmp_path):
    """Run gpu_health_facts on local hosts, each with its recorded ``nvidia-smi nvlink -s``, then the role's filter.

    ``run({host: nvlink text})`` returns ``{stem: parsed JSON}`` of what the play wrote: ``role`` (the role's
    ``__validate_health``), ``with_setting`` (the filter given ``nvlinks_per_gpu``) and one ``<host>`` file per host
    (its registered module result).
    """
    out = tmp_path / 'out'
    out.mkdir()
    by_host, judge = role_health_steps()
    judge = dict(judge, run_once=True)

    def run(texts, nvlinks_per_gpu):
        hosts = {}
        for host, text in texts.items():
            path = tmp_path / ('%s-nvlink.txt' % host)
            path.write_text(text)
            hosts[host] = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                           'nvlink_file': str(path)}
        (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': hosts}}))
        tasks = [
            {'name': 'Read the GPU and link health from the recorded outputs',
             'hpcfabric.cluster.gpu_health_facts': {
                 'kernel_log_output': '',
                 'nvlink_output': "{{ lookup('ansible.builtin.file', nvlink_file) }}",
                 # no PCI bus and no nvidia-smi: only the recorded NVLink status is read, whatever this machine has
                 'devices_dir': '{{ out }}/no-pci-bus',
                 'nvidia_smi_path': '{{ out }}/no-nvidia-smi'},
             'register': '__validate_health_read'},
            judge,
            {'name': 'Judge them with the boards\' NVLink count',
             'ansible.builtin.set_fact': {
                 '__health_with_setting': '{{ __validate_health_by_host | hpcfabric.cluster.gpu_health_findings('
                                          'nvlinks_per_gpu) }}'},
             'run_once': True},
            {'name': 'Write what each node returned',
             'ansible.builtin.copy': {'dest': '{{ out }}/{{ inventory_hostname }}.json',
                                      'content': '{{ __validate_health_read | to_json }}', 'mode': '0644'}},
            {'name': 'Write the judgements',
             'ansible.builtin.copy': {'dest': '{{ out }}/{{ item.key }}.json', 'content': '{{ item.value | to_json }}',
                                      'mode': '0644'},
             'loop': "{{ {'role': __validate_health, 'with_setting': __health_with_setting} | dict2items }}",
             'run_once': True}]
        play = [{'name': 'The GPU health chain of the validate role', 'hosts': 'all', 'gather_facts': False,
                 'vars': {'__validate_health_by_host': by_host}, 'tasks': tasks}]
        (tmp_path / 'play.yml').write_text(yaml.safe_dump(play, sort_keys=False))
        env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
        extra = {'out': str(out), 'validate_health': True, 'validate_nvlinks_per_gpu': {}, 'nvlinks_per_gpu': nvlinks_per_gpu}
        proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'),
                               '-e', json.dumps(extra)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        return {path.stem: json.loads(path.read_text()) for path in out.glob('*.json')}

    return run


def test_the_module_result_after_json_is_judged_and_unwired_slots_are_no_fault(health_play):
    recorded = (NVLINK / 'h100-pcie-bridged-12-of-18.txt').read_text()
    v100 = (NVLINK / 'v100-sxm2-two-inactive.txt').read_text()
    out = health_play({'node01': recorded, 'node02': derived_one_link_down(), 'node03': v100},
                      {'Tesla V100-SXM2-32GB': 6})

    # what the filter really gets: the link numbers as strings, as JSON gives every dict key
    links = out['node01']['health']['nvlink'][0]['links']
    assert sorted(links, key=int)[:2] == ['0', '1'] and links['4'] == 'inactive'

    role = out['role']
    # node01: the six slots its bridges do not wire are inactive on every H100 PCIe: no finding. node02: GPU 1's link 0
    # is up on every peer and down there. node03: one V100 alone, with nothing that says how many links its board
    # wires - not judged by the role, which gives no nvlinks_per_gpu
    assert [(f['host'], f['device'], f['check']) for f in role['findings']] == [
        ('node02', 'GPU 1 (GPU-9b1446e2-8a89-4cf6-b68c-a98d99e958d3)', 'nvlink')]
    assert role['findings'][0]['seen'] == (
        'NVLink 0 down: 11 of 12 links active (12 is the most any NVIDIA H100 PCIe shows; 4, 5, 10, 11, 16, 17 are '
        'inactive on every one: unwired)')
    assert role['passed'] is False
    assert role['nvlink']['NVIDIA H100 PCIe'] == {'links': 12, 'source': 'peers', 'gpus': 4,
                                                  'active_slots': [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]}

    # the boards' count as a setting judges the V100 too: 4 of 6 active
    judged = out['with_setting']
    assert [(f['host'], f['seen']) for f in judged['findings']] == [
        ('node02', role['findings'][0]['seen']),
        ('node03', 'NVLink 3, 5 down: 4 of 6 links active (nvlinks_per_gpu gives 6 for Tesla V100-SXM2-32GB)')]
    assert judged['findings'][1]['device'] == 'GPU 3 (...)'


def test_a_bad_setting_fails_the_play_naming_it(health_play):
    recorded = (NVLINK / 'h100-pcie-bridged-12-of-18.txt').read_text()
    with pytest.raises(AssertionError, match=r"nvlinks_per_gpu\.NVIDIA H100 PCIe must be a number of links >= 1"):
        health_play({'node01': recorded}, {'NVIDIA H100 PCIe': 'twelve'})
