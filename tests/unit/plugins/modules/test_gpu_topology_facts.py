# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_topology_facts end to end: saved text, a missing or failing nvidia-smi, and NVML."""
from __future__ import annotations
import os
import shutil

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import gpu_topology_facts

CMD = 'nvidia-smi-topo'
# the fake nvidia-smi runs with PATH reduced to its own directory
CAT = shutil.which('cat')
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")


class NVMLError(Exception):
    pass


class NoDriverNVML:
    """Stand-in for pynvml on a host where the library is installed but no driver is loaded."""

    NVMLError = NVMLError

    @staticmethod
    def nvmlInit():
        raise NVMLError('Driver Not Loaded')


class TwoGpuNVML:
    """Stand-in for pynvml answering like a driver with two GPUs (old bindings return bytes)."""

    NVMLError = NVMLError
    shutdowns = []

    class _Pci:
        def __init__(self, index):
            self.busId = b'00000000:%02X:00.0' % (1 + 0x40 * index)

    class _Memory:
        total = 34190917632

    @staticmethod
    def nvmlInit():
        return None

    @classmethod
    def nvmlShutdown(cls):
        cls.shutdowns.append(True)

    @staticmethod
    def nvmlSystemGetDriverVersion():
        return '575.57.08'

    @staticmethod
    def nvmlDeviceGetCount():
        return 2

    @staticmethod
    def nvmlDeviceGetHandleByIndex(index):
        return index

    @staticmethod
    def nvmlDeviceGetName(handle):
        return b'NVIDIA GeForce RTX 5090'

    @staticmethod
    def nvmlDeviceGetUUID(handle):
        return 'GPU-%d' % handle

    @classmethod
    def nvmlDeviceGetPciInfo(cls, handle):
        return cls._Pci(handle)

    @classmethod
    def nvmlDeviceGetMemoryInfo(cls, handle):
        return cls._Memory()


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """Put an nvidia-smi script that prints the given text and exits with rc on an otherwise empty PATH."""
    def make(text, rc=0):
        (tmp_path / 'stdout.txt').write_text(text, encoding='utf-8')
        script = tmp_path / 'nvidia-smi'
        script.write_text('#!/bin/sh\n'
                          '[ "$*" = "topo -m" ] || { echo "unexpected arguments: $*" >&2; exit 2; }\n'
                          '%s "%s"\nexit %d\n' % (CAT, tmp_path / 'stdout.txt', rc), encoding='utf-8')
        script.chmod(0o755)
        monkeypatch.setenv('PATH', str(tmp_path))
        return script
    return make


def facts_of(result):
    return result['ansible_facts']['gpu_topology']


@pytest.mark.parametrize('check_mode', [False, True])
def test_output_is_parsed_without_running_anything(fixture_text, run_module, monkeypatch, tmp_path, check_mode):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(gpu_topology_facts, 'pynvml', TwoGpuNVML)
    text = fixture_text(CMD, 'dgx-a100-8gpu-nv12-nic-legend.txt')
    result = run_module(gpu_topology_facts, {'output': text}, check_mode=check_mode)
    assert result['changed'] is False and 'failed' not in result
    facts = facts_of(result)
    assert (facts['gpu_count'], facts['nic_count'], facts['nvlink']) == (8, 10, True)
    assert facts['links']['GPU0']['GPU1'] == 'NV12'
    assert facts['gpus'][0]['nearest_nics'] == ['mlx5_0', 'mlx5_1']
    assert facts['gpus'][0]['cpu_affinity'] == '48-63,176-191'
    # NVML would describe this machine, not the one the text came from
    assert facts['nvml'] is None
    assert result['warnings'] == []


def test_truncated_output_returns_facts_and_warnings(fixture_text, run_module):
    result = run_module(gpu_topology_facts, {'output': fixture_text(CMD, 'h100-8gpu-nv18-truncated.txt')})
    assert 'failed' not in result
    assert facts_of(result)['gpus'][7]['nearest_nics'] == ['NIC1']
    assert "line 16 is not a matrix row (output truncated?): 'NIC'" in result['warnings']
    assert 'no matrix row for NIC6, NIC7, NIC8 (output truncated?)' in result['warnings']


def test_unparseable_output_fails_naming_command_and_line(run_module):
    result = run_module(gpu_topology_facts, {'output': NO_DRIVER + '\n'})
    assert result['failed'] is True
    assert result['msg'].startswith('cannot parse nvidia-smi topo -m output: no topology matrix header')
    assert result['line'] == NO_DRIVER


def test_missing_nvidia_smi_fails_naming_it(run_module, monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    result = run_module(gpu_topology_facts, {})
    assert result['failed'] is True
    assert result['msg'].startswith("nvidia-smi not found (looked for 'nvidia-smi'")
    assert result['msg'].endswith('is the NVIDIA driver installed?')


def test_missing_explicit_path_fails_naming_it(run_module):
    result = run_module(gpu_topology_facts, {'nvidia_smi_path': '/nonexistent/bin/nvidia-smi'})
    assert result['failed'] is True
    assert "'/nonexistent/bin/nvidia-smi'" in result['msg']


@pytest.mark.parametrize('check_mode', [False, True])
def test_runs_nvidia_smi_topo_m(fixture_text, fake_smi, run_module, monkeypatch, check_mode):
    fake_smi(fixture_text(CMD, 'h20-8gpu-nv18-nic-legend.txt'))
    monkeypatch.setattr(gpu_topology_facts, 'pynvml', None)
    result = run_module(gpu_topology_facts, {}, check_mode=check_mode)
    facts = facts_of(result)
    assert (facts['gpu_count'], facts['nic_count']) == (8, 8)
    assert facts['nics'][0]['device'] == 'mlx5_1'
    assert facts['gpus'][5]['nearest_nics'] == ['mlx5_6']
    # nvidia-ml-py not installed: no inventory and nothing to warn about
    assert facts['nvml'] is None
    assert result['warnings'] == []


def test_explicit_path_is_used(fixture_text, fake_smi, run_module, monkeypatch):
    script = fake_smi(fixture_text(CMD, 'rtx5090-2gpu-phb.txt'))
    monkeypatch.setenv('PATH', '/nonexistent')
    result = run_module(gpu_topology_facts, {'nvidia_smi_path': str(script), 'nvml': False})
    assert facts_of(result)['links']['GPU1']['GPU0'] == 'PHB'


def test_exit_code_9_fails_quoting_nvidia_smi(fake_smi, run_module):
    fake_smi(NO_DRIVER + '\n', rc=9)
    result = run_module(gpu_topology_facts, {})
    assert result['failed'] is True
    assert result['rc'] == 9
    assert result['msg'] == 'nvidia-smi topo -m failed with exit code 9: ' + NO_DRIVER


def test_nvml_installed_without_driver_gives_null_and_a_warning(fixture_text, fake_smi, run_module, monkeypatch):
    fake_smi(fixture_text(CMD, 'rtx5090-2gpu-phb.txt'))
    monkeypatch.setattr(gpu_topology_facts, 'pynvml', NoDriverNVML)
    result = run_module(gpu_topology_facts, {})
    assert 'failed' not in result
    assert facts_of(result)['nvml'] is None
    assert result['warnings'] == ['NVML is unavailable, nvml is null: Driver Not Loaded']


def test_nvml_false_skips_the_library(fixture_text, fake_smi, run_module, monkeypatch):
    fake_smi(fixture_text(CMD, 'rtx5090-2gpu-phb.txt'))
    monkeypatch.setattr(gpu_topology_facts, 'pynvml', NoDriverNVML)
    result = run_module(gpu_topology_facts, {'nvml': False})
    assert facts_of(result)['nvml'] is None
    assert result['warnings'] == []


def test_nvml_inventory_is_merged(fixture_text, fake_smi, run_module, monkeypatch):
    fake_smi(fixture_text(CMD, 'rtx5090-2gpu-phb.txt'))
    monkeypatch.setattr(gpu_topology_facts, 'pynvml', TwoGpuNVML)
    TwoGpuNVML.shutdowns[:] = []
    result = run_module(gpu_topology_facts, {})
    assert facts_of(result)['nvml'] == [
        {'index': 0, 'name': 'NVIDIA GeForce RTX 5090', 'uuid': 'GPU-0', 'pci_bus_id': '00000000:01:00.0',
         'memory_total_mib': 32607, 'driver_version': '575.57.08'},
        {'index': 1, 'name': 'NVIDIA GeForce RTX 5090', 'uuid': 'GPU-1', 'pci_bus_id': '00000000:41:00.0',
         'memory_total_mib': 32607, 'driver_version': '575.57.08'},
    ]
    assert TwoGpuNVML.shutdowns == [True]
    assert result['warnings'] == []


def test_real_nvidia_ml_py_without_a_driver():
    pynvml = pytest.importorskip('pynvml')
    if shutil.which('nvidia-smi') or os.path.exists('/dev/nvidiactl'):
        pytest.skip('this host has an NVIDIA driver')
    inventory, problem = gpu_topology_facts.nvml_inventory(pynvml)
    assert inventory is None
    assert problem.startswith('NVML is unavailable, nvml is null: ')
