#!/bin/sh
# mpirun starts this once per rank: rank_env.sh MAP [--rail N] COMMAND... The rank already has the node's job
# environment (mca_base_env_list, the same as a login shell's). The map, written by the validate role from the cluster
# model, only binds; then the command runs. Without a map (no GPU facts, as in the lab) the command runs as it is.
# - a rank of an all-node job: its GPU's nearest fabric RDMA ports (a subset of the job environment's UCX_NET_DEVICES)
#   and the GPU's NUMA node, from the line of its local rank;
# - --rail N, a one-rank-per-node job on rail N alone (the job pins the rail's port): the GPU the model chose for that
#   rail, made the only one the rank sees, and the GPU's NUMA node, from the line "railN".
map="$1"
shift
key="${OMPI_COMM_WORLD_LOCAL_RANK:-0}"
if [ "${1:-}" = "--rail" ]; then
  key="rail$2"
  shift 2
fi
if [ -r "$map" ]; then
  # lines: key gpu net_devices numa ("-": leave the setting as it is)
  line="$(awk -v k="$key" '$1 == k { print $2 " " $3 " " $4; exit }' "$map")"
  gpu="${line%% *}"
  rest="${line#* }"
  nets="${rest% *}"
  numa="${rest#* }"
  case "$key" in
    rail*)
      if [ -n "$gpu" ] && [ "$gpu" != "-" ]; then
        CUDA_DEVICE_ORDER=PCI_BUS_ID
        CUDA_VISIBLE_DEVICES="$gpu"
        export CUDA_DEVICE_ORDER CUDA_VISIBLE_DEVICES
      fi
      ;;
  esac
  if [ -n "$nets" ] && [ "$nets" != "-" ]; then
    UCX_NET_DEVICES="$nets"
    export UCX_NET_DEVICES
  fi
  if [ -n "$numa" ] && [ "$numa" != "-" ] && command -v numactl >/dev/null 2>&1; then
    exec numactl --cpunodebind="$numa" --membind="$numa" "$@"
  fi
fi
exec "$@"
