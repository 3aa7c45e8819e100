#!/usr/bin/env bash
# How close the allreduce engines get to the link, on the first two nodes of gpu_nodes with one rank per slot of the
# hostfile (the lab: a rank per rail), launched as the validation launches them: as the MPI user, through rank_env.sh
# and the affinity map the validate role wrote (rank l of each node on rail l).
# 1. iperf3 over rail 0: one TCP stream, four, and both directions at once;
# 2. MPI_Sendrecv both ways (tests/perf/mpi_bidir.py): rank l of one node with rank l of the other, every pair at
#    once - MPI's own rate over each rail with no reduction, the limit of the ring's inter-node phase;
# 3. the bench, --engine ring,mpi: each size's busbw, and the ring's rails (their inter-node bus bandwidth) as a
#    fraction of the Sendrecv rate of one pair.
# Usage: tests/perf/fabric_efficiency.sh [INVENTORY]   (default inventories/lab, after `make demo` or site.yml)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_NOCOLOR=1 ANSIBLE_LOAD_CALLBACK_PLUGINS=0 ANSIBLE_STDOUT_CALLBACK=ansible.builtin.minimal
inv="${1:-inventories/lab}"
# the group's hosts wherever the inventory keeps them (the lab: in a child group)
read -r a b < <(ansible -i "$inv" gpu_nodes --list-hosts 2>/dev/null | sed -n 's/^ *//; /^hosts (/d; p' | head -2 | paste -sd' ')
[ -n "${b:-}" ] || { echo "need two nodes in gpu_nodes of $inv" >&2; exit 1; }

on() {  # on HOST COMMAND: the command's stdout
  ansible -i "$inv" "$1" -m ansible.builtin.command -a "$2" -o 2>&1 | sed -n 's/^[^|]*| [A-Z]* | rc=0 | (stdout) //p' | sed 's/\\n/\n/g'
}
var() { ansible-inventory -i "$inv" --host "$1" | python3 -c 'import json, sys; v = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"; }

ansible -i "$inv" "$a,$b" -m ansible.builtin.apt -a "name=iperf3 state=present" >/dev/null
ip_b="$(var "$b" 'v["fabric_network_interfaces"][0]["address"].split("/")[0]')"
iperf() {  # iperf ARGS...: GB/s received (both directions at once: the slower direction)
  on "$b" "iperf3 --server --daemon --one-off --bind $ip_b" >/dev/null
  sleep 1
  on "$a" "iperf3 --client $ip_b --time 10 --json $*" | python3 -c '
import json, sys
end = json.load(sys.stdin)["end"]
print(min(end["sum_received"]["bits_per_second"], end.get("sum_received_bidir_reverse", end["sum_received"])["bits_per_second"]) / 8e9)'
}
one="$(iperf)" four="$(iperf --parallel 4)" bidir="$(iperf --bidir)"
printf 'iperf3 %s -> %s over rail 0: %.3f GB/s (1 stream), %.3f GB/s (4 streams), %.3f GB/s each way (both directions at once)\n' \
  "$a" "$b" "$one" "$four" "$bidir"

user="$(var "$a" 'v.get("ssh_trust_user", "mpiuser")')"
slots="$(var "$a" 'v.get("mpi_hostfile_slots") or 1')"
bench_dir="$(var "$a" 'v.get("validate_bench_dir", "/opt/hpcfabric/bench")')"
work_dir="$(var "$a" 'v.get("validate_work_dir", "/var/tmp/hpcfabric-validate")')"
names="$(on "$a" "cat /etc/mpi/hostfile" | grep -v '^#' | head -2 | awk -v s="$slots" '{print $1 ":" s}' | paste -sd,)"
# the Python the validation's jobs run: the bench_env role's, as its local fact records it
python="$(on "$a" "cat /etc/ansible/facts.d/hpcfabric_bench_env.fact" | python3 -c 'import json, sys; print(json.load(sys.stdin)["python"])' 2>/dev/null || echo python3)"
launch="mpirun --host $names -np $((2 * slots)) $bench_dir/rank_env.sh $work_dir/affinity $python"
echo "$((2 * slots)) ranks ($slots per node) as the validation starts them: $launch ..."
ansible -i "$inv" "$a,$b" -m ansible.builtin.copy -a "src=tests/perf/mpi_bidir.py dest=/tmp/hpcfabric-mpi-bidir.py mode=0644" >/dev/null
sendrecv="$(on "$a" "su - $user -c '$launch /tmp/hpcfabric-mpi-bidir.py'")"
echo "$sendrecv" | while read -r size pair all add; do
  printf 'MPI_Sendrecv %9d B both ways, %s pair(s) at once: %.3f GB/s each way per pair, %.3f all pairs = %3.0f%% of iperf3 both directions; a numpy add of it %.1f ms\n' \
    "$size" "$slots" "$pair" "$all" "$(python3 -c "print(100 * $all / $bidir)")" "$add"
done
on "$a" "su - $user -c '$launch $bench_dir/allreduce.py --device cpu --engine ring,mpi --min-bytes 1M --max-bytes 64M --iters 10 --warmup 3 --json /tmp/hpcfabric-efficiency.json >/dev/null && cat /tmp/hpcfabric-efficiency.json'" |
  python3 -c '
import json, sys
limits = dict((int(line.split()[0]), float(line.split()[1])) for line in sys.argv[1].splitlines() if line.strip())
bench = json.load(sys.stdin)
print("ring: %s" % bench["engines"]["ring"]["algorithm"])
print("mpi:  served by coll/%s" % bench["engines"]["mpi"].get("component"))
for row in bench["results"]:
    line = "%-4s %9d B: busbw %.3f GB/s" % (row["engine"], row["size_bytes"], row["busbw_gbs"])
    rails = [rail for rail in row.get("rails") or [] if rail["busbw_gbs"]]
    limit = limits.get(row["size_bytes"])
    if rails and limit:
        line += "; rails %s = %s of MPI_Sendrecv per pair at this size" % (
            ", ".join("%s %.3f" % (rail["rail"], rail["busbw_gbs"]) for rail in rails),
            ", ".join("%.2f" % (rail["busbw_gbs"] / limit) for rail in rails))
    print(line)
for link in sorted(bench["engines"]["ring"].get("links") or [], key=lambda link: link["gbs"]):
    print("ring link probe: rail %s %s -> %s %.3f GB/s" % (link["rail"], link["src"], link["dst"], link["gbs"]))
' "$sendrecv"
