#!/usr/bin/env bash
# How close the allreduce engines get to the link, on the first two nodes of gpu_nodes with one rank per slot of the
# hostfile (the lab: a rank per rail), launched as the validation launches them: as the MPI user, through rank_env.sh
# and the affinity map the validate role wrote (rank l of each node on rail l).
# 1. iperf3 over rail 0: one TCP stream, four, and both directions at once;
# 2. MPI_Sendrecv both ways (tests/perf/mpi_bidir.py): rank l of one node with rank l of the other, every pair at
#    once - MPI's own rate over each rail with no reduction, the limit of the ring's inter-node phase;
# 3. the bench, --engine ring,mpi: each size's busbw, and the ring's rails (their inter-node bus bandwidth) as a
#    fraction of the Sendrecv rate of one pair.
# Usage: tests/perf/fabric_efficiency.sh [--dry-run] [INVENTORY]
#   INVENTORY: default the running lab's (LAB_INVENTORY in LAB_DIR/lab.env, else inventories/lab), after `make demo`
#   or site.yml on it (`make perf` runs this on the lab). --dry-run reads the inventory, prints what the run would use
#   and contacts no node.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_NOCOLOR=1
die() { echo "fabric_efficiency.sh: $*" >&2; exit 1; }
dry_run=0
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  --dry-run) dry_run=1; shift ;;
  -*) die "unknown option $1 (--help)" ;;
esac
lab_inventory() {  # the inventory tools/lab wrote for the lab in LAB_DIR
  local env="${LAB_DIR:-$ROOT/.cache/lab}/lab.env"
  sed -n 's/^LAB_INVENTORY=//p' "$env" 2>/dev/null | tail -1 | grep . || echo "$ROOT/inventories/lab"
}
inv="${1:-$(lab_inventory)}"
[ -e "$inv" ] || die "no inventory at $inv: start a lab and provision it (make demo), or name an inventory"

# an ad-hoc task's result on each host as JSON, through ansible.posix.json (the oneline callback is deprecated)
adhoc() {  # adhoc PATTERN MODULE ARGS [ANSIBLE OPTIONS...]
  ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=ansible.posix.json ANSIBLE_CALLBACKS_ENABLED=ansible.posix.json \
    ansible -i "$inv" "$1" -m "$2" -a "$3" "${@:4}"
}
results() {  # results: each host's result from adhoc's JSON; fails naming the host and its message unless all ran
  python3 -c '
import json, sys
for host, res in json.load(sys.stdin)["plays"][0]["tasks"][0]["hosts"].items():
    if res.get("failed") or res.get("unreachable") or res.get("rc", 0):
        sys.exit("%s: %s" % (host, (res.get("stderr") or res.get("msg") or "failed").strip()))
    json.dump(res, sys.stdout)
    print()'
}
on() {  # on HOST COMMAND: the command's stdout; fails naming the host unless the command exits 0
  adhoc "$1" ansible.builtin.command "$2" | results | python3 -c 'import json, sys; print(json.load(sys.stdin)["stdout"])'
}

# The inventory as Ansible reads it: groups['gpu_nodes'] resolves child groups (the lab keeps its nodes in lab_nodes,
# a child of gpu_nodes) in Ansible's own order, and hostvars merge group and host variables; the defaults are the
# roles' (ssh_trust, mpi_hostfile, validate).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/plan.yml" <<'VARS'
perf_nodes: "{{ groups.get('gpu_nodes', []) }}"
perf_first: "{{ hostvars[perf_nodes[0]] if perf_nodes else {} }}"
perf_plan:
  nodes: "{{ perf_nodes }}"
  address: "{{ (hostvars[perf_nodes[1]].fabric_network_interfaces | default([{}]))[0].address | default('') if perf_nodes[1:] else '' }}"
  user: "{{ perf_first.ssh_trust_user | default('mpiuser') }}"
  hostfile: "{{ perf_first.mpi_hostfile_path | default('/etc/mpi/hostfile') }}"
  bench_dir: "{{ perf_first.validate_bench_dir | default('/opt/hpcfabric/bench') }}"
  work_dir: "{{ perf_first.validate_work_dir | default('/var/tmp/hpcfabric-validate') }}"
VARS
plan="$(adhoc localhost ansible.builtin.debug var=perf_plan -e "@$tmp/plan.yml" 2>"$tmp/err" | results)" ||
  { cat "$tmp/err" >&2; die "cannot read the inventory $inv"; }
field() {  # field NAME: one value of the plan (a list: space-separated)
  python3 -c '
import json, sys
v = json.loads(sys.argv[1])["perf_plan"][sys.argv[2]]
print(" ".join(v) if isinstance(v, list) else v)' "$plan" "$1"
}
read -r a b _ <<< "$(field nodes) "
[ -n "${b:-}" ] || die "need two nodes in gpu_nodes of $inv (found: $(field nodes))"
ip_b="$(field address)"; ip_b="${ip_b%%/*}"
[ -n "$ip_b" ] || die "$b has no fabric_network_interfaces address in $inv"
user="$(field user)" hostfile="$(field hostfile)" bench_dir="$(field bench_dir)" work_dir="$(field work_dir)"
echo "inventory $inv: gpu_nodes $(field nodes | wc -w) nodes; measuring $a -> $b ($b's first fabric address: $ip_b), as $user, hostfile $hostfile, bench $bench_dir, work $work_dir"
[ "$dry_run" -eq 0 ] || exit 0

on "$a" "test -r $hostfile -a -r $work_dir/affinity -a -x $bench_dir/rank_env.sh" >/dev/null 2>&1 ||
  die "$a has no $hostfile, $work_dir/affinity or $bench_dir/rank_env.sh: provision the lab first (make demo, or site.yml on $inv)"
adhoc "$a,$b" ansible.builtin.apt "name=iperf3 state=present" | results >/dev/null
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

# the first two nodes of the hostfile the validation uses, with its slots (mpi_hostfile_slots, else the GPU count)
first_two="$(on "$a" "cat $hostfile" | grep -v '^#' | grep . | head -2)"
slots="$(echo "$first_two" | sed -n '1s/.*slots=\([0-9]*\).*/\1/p')"
[ -n "$slots" ] || slots=1
names="$(echo "$first_two" | awk -v s="$slots" '{print $1 ":" s}' | paste -sd,)"
# the Python the validation's jobs run: the bench_env role's, as its local fact records it
python="$(on "$a" "cat /etc/ansible/facts.d/hpcfabric_bench_env.fact" | python3 -c 'import json, sys; print(json.load(sys.stdin)["python"])' 2>/dev/null || echo python3)"
launch="mpirun --host $names -np $((2 * slots)) $bench_dir/rank_env.sh $work_dir/affinity $python"
echo "$((2 * slots)) ranks ($slots per node) as the validation starts them: $launch ..."
adhoc "$a,$b" ansible.builtin.copy "src=tests/perf/mpi_bidir.py dest=/tmp/hpcfabric-mpi-bidir.py mode=0644" | results >/dev/null
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
for link in sorted(bench["engines"]["ring"].get("links") or [], key=lambda link: link["gbs"] or 0):
    print("ring link probe: rail %s %s -> %s %.3f GB/s" % (link["rail"], link["src"], link["dst"], link["gbs"] or 0))
' "$sendrecv"
