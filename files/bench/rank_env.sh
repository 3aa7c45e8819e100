#!/bin/sh
# mpirun or srun starts this once per rank: rank_env.sh MAP [--rail N] COMMAND... The rank already has the node's job
# environment (mca_base_env_list, the same as a login shell's). The map, written by the validate role from the cluster
# model, only binds; then the command runs. Without a map (no GPU facts and no slots, as in a bare lab) the command
# runs as it is.
# - a rank of an all-node job, from the line of its local rank: its GPU (HPCFABRIC_GPU, which allreduce.py selects;
#   every GPU stays visible, so that CUDA IPC between the node's ranks works), the fabric ports of its rail (a subset
#   of the job environment's UCX_NET_DEVICES), the rail (HPCFABRIC_RAIL, which the ring engine reports) and the GPU's
#   NUMA node;
# - --rail N, a one-rank-per-node job on rail N alone (the job pins the rail's port): the GPU the model chose for that
#   rail, made the only one the rank sees, the rail, and the GPU's NUMA node, from the line "railN".
map="$1"
shift
# the rank on its node: mpirun says it in OMPI_COMM_WORLD_LOCAL_RANK, srun in SLURM_LOCALID
key="${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}"
if [ "${1:-}" = "--rail" ]; then
  key="rail$2"
  shift 2
fi
if [ -r "$map" ]; then
  # lines: key gpu net_devices numa rail ("-": leave the setting as it is; a map without the rail column has none)
  line="$(awk -v k="$key" '$1 == k { print $2, $3, $4, ($5 == "" ? "-" : $5); exit }' "$map")"
  read -r gpu nets numa rail <<EOF2
$line
EOF2
  if [ -n "$gpu" ] && [ "$gpu" != "-" ]; then
    case "$key" in
      rail*)
        CUDA_DEVICE_ORDER=PCI_BUS_ID
        CUDA_VISIBLE_DEVICES="$gpu"
        export CUDA_DEVICE_ORDER CUDA_VISIBLE_DEVICES
        ;;
      *)
        HPCFABRIC_GPU="$gpu"
        export HPCFABRIC_GPU
        ;;
    esac
  fi
  if [ -n "$nets" ] && [ "$nets" != "-" ]; then
    UCX_NET_DEVICES="$nets"
    export UCX_NET_DEVICES
  fi
  if [ -n "$rail" ] && [ "$rail" != "-" ]; then
    HPCFABRIC_RAIL="$rail"
    export HPCFABRIC_RAIL
  fi
  if [ -n "$numa" ] && [ "$numa" != "-" ] && command -v numactl >/dev/null 2>&1; then
    exec numactl --cpunodebind="$numa" --membind="$numa" "$@"
  fi
fi
exec "$@"
