# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Slurm's node health check (files/slurm/hpcfabric_healthcheck.py): its problems and drain decisions on recorded
nvidia-smi, kernel log and RDMA sysfs outputs, the script run whole against fake tools, and its slurm.conf lines."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health, ib_sysfs
from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings.slurm import problems as settings_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_conf import (
    REASON_MAX, cluster_plan, node_hardware, render_slurm_conf, restart_needed)

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / 'files' / 'slurm' / 'hpcfabric_healthcheck.py'
FIXTURES = ROOT / 'tests' / 'unit' / 'fixtures'
# one GPU (Tesla P100, driver 510), recorded
SMI_XML = FIXTURES / 'nvidia-smi-q' / 'tesla-p100-510.xml'
XID79 = FIXTURES / 'kernel_log' / 'xid79-no-pid.txt'
# XID 13 and 109 only: the application's, which clear when the job ends
APP_XIDS = FIXTURES / 'kernel_log' / 'dmesg-ctime-xid13-xid109.txt'
# mlx5_0 IB Active 200 (no netdev), mlx5_10 IB Down behind ibp204s0, mlx5_2 Ethernet Active 2.5 behind ens13
IB_MIXED = FIXTURES / 'sysfs' / 'ib_mixed'
DRIVER = 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  510.47.03  Mon Jan 24 22:58:54 UTC 2022\n'
STAMP = ' [root@2026-11-27T21:00:00]'


def _load():
    spec = importlib.util.spec_from_file_location('hpcfabric_healthcheck', str(SCRIPT))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hc = _load()


def gpus():
    return gpu_health.parse_nvidia_smi_xml(SMI_XML.read_text())


def rdma():
    return ib_sysfs.read_devices(ib_sysfs.class_dir(str(IB_MIXED)))[0]


def healthy(**extra):
    readings = {'driver': DRIVER, 'gpus': gpus(), 'xids': [], 'rdma': rdma(), 'failed': {}}
    readings.update(extra)
    return readings


# --- problems -----------------------------------------------------------------------------------------------------

def test_a_healthy_node_has_no_problem():
    config = {'gpu_count': 1, 'rdma': True, 'rdma_interfaces': ['ens13'], 'port_rate_gbps': 2.5}
    assert hc.problems(config, healthy()) == []
    # the application's XIDs (13, 109) are no hardware fault
    assert hc.problems(config, healthy(xids=gpu_health.parse_xids(APP_XIDS.read_text()))) == []


def test_the_lab_without_gpus_or_rdma_checks_nothing():
    assert hc.problems({'gpu_count': 0, 'rdma': False}, {'failed': {}}) == []


def test_fewer_gpus_than_the_model_counted_names_both_counts():
    assert hc.problems({'gpu_count': 8}, healthy()) == ['GPUs: nvidia-smi sees 1 of 8']


def test_no_driver_is_said_before_anything_else():
    found = hc.problems({'gpu_count': 8}, healthy(driver=None, gpus=None))
    assert found == ['NVIDIA driver not loaded (no /proc/driver/nvidia/version)']


def test_a_hardware_xid_is_a_problem():
    found = hc.problems({'gpu_count': 1}, healthy(xids=gpu_health.parse_xids(XID79.read_text())))
    assert found == ['GPU 0000:44:00.0: XID 79, GPU has fallen off the bus: GPU has fallen off the bus']


def test_a_port_down_names_device_port_and_netdev():
    found = hc.problems({'rdma': True, 'rdma_interfaces': ['ibp204s0', 'ens13']}, healthy())
    assert found == ['RDMA mlx5_10 port 1 (ibp204s0): Down, not Active']


def test_a_port_below_the_rate_names_both_rates():
    found = hc.problems({'rdma': True, 'rdma_interfaces': ['ens13'], 'port_rate_gbps': 200}, healthy())
    assert found == ['RDMA mlx5_2 port 1 (ens13): 2.5 Gb/s, expected 200 Gb/s']


def test_a_fabric_interface_without_its_rdma_port():
    assert hc.problems({'rdma': True, 'rdma_interfaces': ['fab0']}, healthy()) == [
        'RDMA: no port behind fabric interface fab0']


def test_without_named_interfaces_one_active_port_at_the_rate_will_do():
    assert hc.problems({'rdma': True}, healthy()) == []
    assert hc.problems({'rdma': True, 'port_rate_gbps': 200}, healthy()) == [
        'RDMA mlx5_2 port 1 (ens13): 2.5 Gb/s, expected 200 Gb/s']
    assert hc.problems({'rdma': True}, healthy(rdma={}, rdma_dir='/sys/class/infiniband')) == [
        'RDMA: no device under /sys/class/infiniband']


@pytest.mark.parametrize('source, expected', [
    ('nvidia-smi', 'nvidia-smi failed: nvidia-smi: no answer in 20 s'),
    ('kernel log', 'kernel log failed: nvidia-smi: no answer in 20 s'),
    ('RDMA', 'RDMA failed: nvidia-smi: no answer in 20 s'),
])
def test_a_reader_that_fails_is_a_problem(source, expected):
    readings = healthy(failed={source: 'nvidia-smi: no answer in 20 s'})
    assert expected in hc.problems({'gpu_count': 1, 'rdma': True}, readings)


def test_an_unreadable_config_is_a_problem_not_a_healthy_node():
    assert hc.problems({}, {'failed': {'config': 'cannot read config.json'}}) == [
        'config failed: cannot read config.json']


@pytest.mark.parametrize('config, message', [
    ({'gpu_count': -1}, 'gpu_count'), ({'gpu_count': True}, 'gpu_count'), ({'port_rate_gbps': 0}, 'port_rate_gbps'),
    ({'xid_window_s': 0}, 'xid_window_s'), ({'rdma_interfaces': 'fab0'}, 'rdma_interfaces'), ([], 'JSON object'),
])
def test_a_config_the_check_cannot_use(tmp_path, config, message):
    path = tmp_path / 'config.json'
    path.write_text(json.dumps(config))
    assert message in hc.load_config(str(path))[1]
    assert 'cannot read' in hc.load_config(str(tmp_path / 'missing.json'))[1]


# --- drain and resume ---------------------------------------------------------------------------------------------

def test_a_node_with_problems_is_drained_with_the_first_one_cut_and_without_quotes():
    found = ['nvidia-smi failed: exit 9: "NVIDIA-SMI has failed"\nbecause ' + 'x' * 200, 'GPUs: nvidia-smi sees 0 of 8']
    what, reason = hc.action(found, {'State': 'IDLE'})
    assert what == 'drain'
    assert reason.startswith('hpcfabric: health: nvidia-smi failed: exit 9: ')
    assert '"' not in reason and '\n' not in reason and len(reason) == REASON_MAX


def test_only_its_own_drain_is_resumed():
    reason = 'hpcfabric: health: GPUs: nvidia-smi sees 1 of 8'
    assert hc.action([], {'State': 'IDLE+DRAIN', 'Reason': reason + STAMP}) == ('resume', reason)
    assert hc.action([], {'State': 'DOWN+DRAIN', 'Reason': reason + STAMP}) == ('resume', reason)
    assert hc.action([], {'State': 'IDLE'}) == (None, None)


@pytest.mark.parametrize('found', [[], ['GPUs: nvidia-smi sees 1 of 8']])
@pytest.mark.parametrize('state, reason', [
    ('IDLE+DRAIN', 'bad DIMM'),
    ('MIXED+DRAIN', 'hpcfabric: isolation: node node01 is slow on every rail'),
    ('DOWN*', 'Not responding'),
    ('DOWN+DRAIN', 'hpcfabric: busbw below threshold'),
])
def test_someone_elses_drain_is_never_touched(found, state, reason):
    assert hc.action(found, {'State': state, 'Reason': reason + STAMP}) == (None, None)


def test_its_own_drain_is_kept_or_updated_but_never_repeated():
    old = 'hpcfabric: health: GPUs: nvidia-smi sees 1 of 8'
    fields = {'State': 'IDLE+DRAIN', 'Reason': old + STAMP}
    assert hc.action(['GPUs: nvidia-smi sees 1 of 8'], fields) == (None, None)
    assert hc.action(['RDMA: no port behind fabric interface fab0'], fields) == (
        'drain', 'hpcfabric: health: RDMA: no port behind fabric interface fab0')


def test_a_node_whose_state_could_not_be_read_is_left_alone():
    assert hc.action(['GPUs: nvidia-smi sees 1 of 8'], None) == (None, None)


def test_a_command_past_its_timeout_is_a_reason_not_a_hang():
    assert hc.run([sys.executable, '-c', 'import time; time.sleep(30)'], 1) == (
        None, '%s: no answer in 1 s' % sys.executable)
    assert hc.run(['/nonexistent/nvidia-smi'], 1)[1].startswith('/nonexistent/nvidia-smi: ')


# --- the script, run whole ----------------------------------------------------------------------------------------

def install(directory):
    """What roles/slurm/tasks/healthcheck.yml installs: the modules the role's vars list, beside the script with the
    interpreter line the task puts before it."""
    modules = yaml.safe_load((ROOT / 'roles' / 'slurm' / 'vars' / 'main.yml').read_text())[
        '__slurm_healthcheck_modules']
    directory.mkdir()
    for name in modules:
        shutil.copy(str(ROOT / 'plugins' / 'module_utils' / name), str(directory / name))
    script = directory / 'hpcfabric_healthcheck.py'
    script.write_text('#!/usr/bin/python3\n' + SCRIPT.read_text())
    return script


class Node:
    """A fake node: the check as the role installs it, nvidia-smi, journalctl, dmesg and scontrol first on PATH, each
    logging its arguments."""

    def __init__(self, root):
        self.root = root
        self.script = install(root / 'opt')
        self.bin = root / 'bin'
        self.bin.mkdir()
        self.log = root / 'calls.log'
        self.log.write_text('')
        self.proc = root / 'proc'
        (self.proc / 'driver' / 'nvidia').mkdir(parents=True)
        (self.proc / 'driver' / 'nvidia' / 'version').write_text(DRIVER)
        self.sys = root / 'sys'
        shutil.copytree(str(IB_MIXED), str(self.sys))
        self.state = root / 'node.txt'
        self.set_state('IDLE')
        self.tool('nvidia-smi', 'cat "%s"' % SMI_XML)
        self.tool('journalctl', 'cat "%s"' % APP_XIDS)
        self.tool('dmesg', 'cat "%s"' % XID79)
        self.tool('scontrol', 'if [ "$2" = show ]; then cat "%s"; fi' % self.state)
        self.config = root / 'config.json'
        self.configure()

    def tool(self, name, body):
        path = self.bin / name
        path.write_text('#!/bin/sh\necho "%s $*" >> "%s"\n%s\n' % (name, self.log, body))
        path.chmod(0o755)

    def set_state(self, state, reason=None):
        self.state.write_text('NodeName=node01 Arch=x86_64 CPUTot=2 RealMemory=22528 State=%s%s\n'
                              % (state, ' Reason=%s%s' % (reason, STAMP) if reason else ''))

    def configure(self, **config):
        base = {'node': 'node01', 'gpu_count': 1, 'rdma': True, 'rdma_interfaces': ['ens13'], 'port_rate_gbps': None,
                'xid_window_s': None}
        base.update(config)
        self.config.write_text(json.dumps(base))

    def run(self, *args):
        # no PYTHONPATH: the collection is not on a compute node to fall back on, only the copies beside the script
        env = dict((key, value) for key, value in os.environ.items() if not key.startswith('PYTHON'))
        env['PATH'] = '%s:%s' % (self.bin, os.environ.get('PATH', ''))
        return subprocess.run([sys.executable, str(self.script), '--config', str(self.config), '--sysfs-root',
                               str(self.sys), '--procfs-root', str(self.proc)] + list(args),
                              capture_output=True, text=True, env=env, timeout=120, check=False)

    def calls(self):
        return self.log.read_text().splitlines()


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def test_a_healthy_node_prints_nothing_and_only_reads_its_state(node):
    result = node.run()
    assert (result.returncode, result.stdout, result.stderr) == (0, '', '')
    assert node.calls() == ['nvidia-smi -q -x', 'journalctl -k --no-pager -q -o short -b',
                            'scontrol --oneliner show node node01']


def test_a_node_short_of_gpus_is_drained(node):
    node.configure(gpu_count=8)
    result = node.run()
    assert (result.returncode, result.stdout) == (1, 'GPUs: nvidia-smi sees 1 of 8\n')
    assert node.calls()[-1] == ('scontrol update NodeName=node01 State=DRAIN '
                                'Reason=hpcfabric: health: GPUs: nvidia-smi sees 1 of 8')


def test_a_dry_run_says_what_it_would_do_and_does_nothing(node):
    node.configure(gpu_count=8)
    result = node.run('--dry-run')
    assert result.returncode == 1
    assert 'would drain node01' in result.stderr
    assert not [call for call in node.calls() if 'update' in call]


def test_ports_down_or_slow_on_a_fake_sysfs(node):
    node.configure(rdma_interfaces=['ibp204s0', 'ens13'], port_rate_gbps=200)
    result = node.run()
    assert result.stdout.splitlines() == ['RDMA mlx5_10 port 1 (ibp204s0): Down, not Active',
                                          'RDMA mlx5_2 port 1 (ens13): 2.5 Gb/s, expected 200 Gb/s']
    assert node.calls()[-1].endswith('State=DRAIN Reason=hpcfabric: health: RDMA mlx5_10 port 1 (ibp204s0): Down, '
                                     'not Active')
    # the port comes up: the check resumes the node it drained
    (node.sys / 'class' / 'infiniband' / 'mlx5_10' / 'ports' / '1' / 'state').write_text('4: ACTIVE\n')
    node.configure(rdma_interfaces=['ibp204s0'], port_rate_gbps=10)
    node.set_state('IDLE+DRAIN', 'hpcfabric: health: RDMA mlx5_10 port 1 (ibp204s0): Down, not Active')
    result = node.run()
    assert (result.returncode, result.stdout) == (0, '')
    assert node.calls()[-1] == 'scontrol update NodeName=node01 State=RESUME'


def test_the_validations_drain_stays_whatever_the_check_finds(node):
    node.set_state('IDLE+DRAIN', 'hpcfabric: isolation: node01 rail 0 slow')
    for count in (1, 8):
        node.configure(gpu_count=count)
        node.run()
    assert not [call for call in node.calls() if 'update' in call]


def test_a_failing_reader_drains_and_the_kernel_log_falls_back_to_dmesg(node):
    node.tool('nvidia-smi', "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; "
                            'exit 9')
    node.tool('journalctl', 'echo "No journal files were found." >&2; exit 1')
    result = node.run()
    assert result.stdout.splitlines() == [
        "nvidia-smi failed: nvidia-smi: exit 9: NVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver.",
        'GPU 0000:44:00.0: XID 79, GPU has fallen off the bus: GPU has fallen off the bus']
    assert 'dmesg ' in node.calls()
    assert node.calls()[-1].startswith('scontrol update NodeName=node01 State=DRAIN Reason=hpcfabric: health: '
                                       'nvidia-smi failed: nvidia-smi: exit 9: NVIDIA-SMI has failed because')


def test_a_journal_without_the_kernel_log_since_boot_falls_back_to_dmesg(node):
    node.tool('journalctl', 'true')
    result = node.run()
    assert result.stdout == 'GPU 0000:44:00.0: XID 79, GPU has fallen off the bus: GPU has fallen off the bus\n'
    assert node.calls()[1:3] == ['journalctl -k --no-pager -q -o short -b', 'dmesg ']


def test_a_window_reads_the_kernel_log_since_then(node):
    node.configure(xid_window_s=600, rdma=False)
    node.run('--node', 'gpu-a7')
    assert 'journalctl -k --no-pager -q -o short --since=-600s' in node.calls()
    assert node.calls()[-1] == 'scontrol --oneliner show node gpu-a7'


def test_the_role_installs_the_modules_this_test_installs():
    tasks = (ROOT / 'roles' / 'slurm' / 'tasks' / 'healthcheck.yml').read_text()
    assert 'loop: "{{ __slurm_healthcheck_modules }}"' in tasks
    assert "#!/usr/bin/python3\n      {{ lookup('ansible.builtin.file'" in tasks


# --- slurm.conf and the role's settings ---------------------------------------------------------------------------

def _plan(**extra):
    hosts = ['node01', 'node02']
    hardware = dict((host, node_hardware({'processor_vcpus': 2, 'memtotal_mb': 24030})) for host in hosts)
    settings = {'controllers': ['node01'], 'compute': hosts, 'inventory': hosts, 'version': '22.05', 'cgroups': False,
                'cluster_name': 'lab', 'partitions': [{'name': 'gpu', 'default': True}]}
    settings.update(extra)
    return cluster_plan({'hosts': hosts, 'nodes': dict((host, {'gpu_count': 0}) for host in hosts)}, hardware, settings)


HEALTHCHECK = {'healthcheck': True, 'healthcheck_interval': 300,
               'healthcheck_program': '/opt/hpcfabric/healthcheck/hpcfabric_healthcheck.py'}


def healthcheck(**changes):
    settings = dict(HEALTHCHECK)
    settings.update(changes)
    return settings


def test_slurm_conf_runs_the_health_check_on_every_node_when_on():
    lines = render_slurm_conf(_plan(**HEALTHCHECK)).splitlines()
    assert [line for line in lines if line.startswith('HealthCheck')] == [
        'HealthCheckProgram=/opt/hpcfabric/healthcheck/hpcfabric_healthcheck.py', 'HealthCheckInterval=300',
        'HealthCheckNodeState=ANY']
    # before the node lines, with the other settings
    first_node = [index for index, line in enumerate(lines) if line.startswith('NodeName')][0]
    assert lines.index('HealthCheckNodeState=ANY') < first_node


def test_slurm_conf_has_no_health_check_when_off():
    assert 'HealthCheck' not in render_slurm_conf(_plan(**healthcheck(healthcheck=False)))
    assert 'HealthCheck' not in render_slurm_conf(_plan())


def test_turning_the_health_check_on_or_its_interval_is_a_reconfigure():
    off = render_slurm_conf(_plan(**healthcheck(healthcheck=False)))
    on = render_slurm_conf(_plan(**HEALTHCHECK))
    assert restart_needed(off, on) == (False, [])
    assert restart_needed(on, render_slurm_conf(_plan(**healthcheck(healthcheck_interval=60)))) == (False, [])


@pytest.mark.parametrize('settings, label', [
    ({'slurm_healthcheck_interval': 0}, 'slurm_healthcheck_interval'),
    ({'slurm_healthcheck_interval': '300'}, 'slurm_healthcheck_interval'),
    ({'slurm_healthcheck_port_rate_gbps': -400}, 'slurm_healthcheck_port_rate_gbps'),
    ({'slurm_healthcheck_rdma': 'no'}, 'slurm_healthcheck_rdma'),
    ({'slurm_conf_extra': {'HealthCheckProgram': '/usr/sbin/nhc'}}, 'slurm_conf_extra'),
])
def test_the_health_check_settings(settings, label):
    assert [found[0] for found in settings_problems(settings)] == [label]


def test_another_health_check_may_be_named_where_this_one_is_off():
    assert settings_problems({'slurm_healthcheck': False, 'slurm_conf_extra': {'HealthCheckProgram': '/usr/sbin/nhc'},
                              'slurm_healthcheck_interval': 300, 'slurm_healthcheck_port_rate_gbps': 400}) == []
