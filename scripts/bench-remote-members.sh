#!/usr/bin/env bash
# Remote array members vs local ones, in one run: one server exports three RAID-5 arrays of five members each,
# "local" on five files, "remote" on four LUNs of four tgtd processes plus one file, and "crc32c" like "remote"
# on a second LUN of each tgtd with CRC32C header and data digests, all on this machine (127.0.0.1). qemu-img bench drives each LUN in turn, twice (local, remote, crc32c, then again): sequential 1 MiB
# writes and reads at queue depth 16, and 4 KiB writes and reads one per MiB (strided) at queue depth 32; then random
# 4 KiB reads at queue depth 32 with libiscsi's iscsi-perf -r, and random 4 KiB writes at queue depth 32 with the
# project's soak tool (--read-percent 0 --max-io 4K; qemu-img bench and the libiscsi tools have no random write),
# each for RANDOM_SECONDS (default 15).
# Prints MB/s and the CPU the gateway (the server's JVM) and the tgtd processes spent per GiB moved.
# Results and how they were taken: docs/performance.md ("Remote members vs local files").
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/bench-remote-members.sh [-s SIZE] [-d DIR] [-j JAR]
  -s SIZE  size of each member (default 256M)
  -d DIR   scratch directory (default a new one under /tmp)
  -j JAR   stripestack jar (default: bin/stripestack, which builds it when needed)
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
size=256M; dir=""; jar=""
while getopts ":s:d:j:h" opt; do
  case "$opt" in
    s) size="$OPTARG" ;; d) dir="$OPTARG" ;; j) jar="$OPTARG" ;; *) usage; exit 2 ;;
  esac
done
for tool in tgtd tgtadm qemu-img iscsi-perf python3; do
  command -v "$tool" >/dev/null || { echo "bench-remote-members: $tool not found (Debian: tgt, qemu-utils, libiscsi-bin, python3)" >&2; exit 2; }
done
[ -n "$dir" ] || dir="$(mktemp -d /tmp/bench-remote-members.XXXXXX)"
mkdir -p "$dir/data"
tgt_pids=()
tgt_ctls=()
server_pid=""

cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  for pid in "${tgt_pids[@]+"${tgt_pids[@]}"}"; do
    kill -KILL "$pid" 2>/dev/null || true # tgtd ignores SIGTERM
    wait "$pid" 2>/dev/null || true
  done
  for ctl in "${tgt_ctls[@]+"${tgt_ctls[@]}"}"; do
    rm -f "/var/run/tgtd/socket.$ctl" "/var/run/tgtd/socket.$ctl.lock" # a killed tgtd leaves its control socket
  done
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() { # PORT SECONDS
  for _ in $(seq 1 $(( $2 * 10 ))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench-remote-members: nothing listens on 127.0.0.1:$1" >&2; return 1
}

cpu_ticks() { # PID...: user + system clock ticks of these processes
  local total=0 pid
  for pid in "$@"; do
    total=$(( total + $(awk '{print $14 + $15}' "/proc/$pid/stat") ))
  done
  echo "$total"
}

# Four tgtd, two LUNs each, with 256 KiB PDUs and 1 MiB bursts (tgt's defaults are 8 KiB and 256 KiB), granting
# CRC32C digests to the sessions that ask (the "crc32c" array's).
urls=()
digest_urls=()
for i in 1 2 3 4; do
  port=$(free_port)
  ctl=$(( 20000 + RANDOM % 9000 ))
  truncate -s "$size" "$dir/tgt$i.img" "$dir/tgt$i-crc32c.img"
  setsid tgtd -f -C "$ctl" --iscsi "portal=127.0.0.1:$port" >"$dir/tgtd$i.log" 2>&1 </dev/null &
  tgt_pids+=($!)
  tgt_ctls+=("$ctl")
  wait_port "$port" 10
  iqn="iqn.2026-11.io.stripestack.bench:disk$i"
  adm=(tgtadm -C "$ctl" --lld iscsi)
  "${adm[@]}" --mode target --op new --tid 1 --targetname "$iqn"
  "${adm[@]}" --mode logicalunit --op new --tid 1 --lun 1 --bstype rdwr --backing-store "$dir/tgt$i.img"
  "${adm[@]}" --mode logicalunit --op new --tid 1 --lun 2 --bstype rdwr --backing-store "$dir/tgt$i-crc32c.img"
  "${adm[@]}" --mode target --op update --tid 1 --name HeaderDigest --value CRC32C,None
  "${adm[@]}" --mode target --op update --tid 1 --name DataDigest --value CRC32C,None
  "${adm[@]}" --mode target --op update --tid 1 --name MaxRecvDataSegmentLength --value 262144
  "${adm[@]}" --mode target --op update --tid 1 --name MaxBurstLength --value 1048576
  "${adm[@]}" --mode target --op bind --tid 1 --initiator-address ALL
  urls+=("iscsi://127.0.0.1:$port/$iqn/1")
  digest_urls+=("iscsi://127.0.0.1:$port/$iqn/2")
done

port=$(free_port)
iqn="iqn.2026-11.io.stripestack:remote-bench"
cat >"$dir/bench.yaml" <<YAML
data_dir: $dir/data
server:
  portals: ["127.0.0.1:$port"]
arrays:
  local:
    members: [l0.img, l1.img, l2.img, l3.img, l4.img]
    create_member_size: $size
    create_sparse: true
    consistency_policy: bitmap
  remote:
    members: [r0.img, ${urls[0]}, ${urls[1]}, ${urls[2]}, ${urls[3]}]
    create_member_size: $size
    create_sparse: true
    consistency_policy: bitmap
  crc32c:
    members: [c0.img, ${digest_urls[0]}, ${digest_urls[1]}, ${digest_urls[2]}, ${digest_urls[3]}]
    create_member_size: $size
    create_sparse: true
    consistency_policy: bitmap
    remote_header_digest: crc32c
    remote_data_digest: crc32c
targets:
  - iqn: $iqn
    luns:
      - {lun: 0, array: local, readahead: 0}
      - {lun: 1, array: remote, readahead: 0}
      - {lun: 2, array: crc32c, readahead: 0}
YAML
if [ -z "$jar" ]; then
  "$root/bin/stripestack" help >/dev/null # builds the jar when needed
  jar="$root/cli/target/stripestack.jar"
fi
java -jar "$jar" serve --config "$dir/bench.yaml" >"$dir/server.log" 2>&1 &
server_pid=$!
wait_port "$port" 600 # creating the remote array computes its parity over iSCSI first

# name qemu-img-bench-options...
job() {
  local name=$1; shift
  local lun
  for round in 1 2; do
    for lun in 0 1 2; do
      local url="iscsi://127.0.0.1:$port/$iqn/$lun"
      local gw0 tg0 t0 t1 bytes
      gw0=$(cpu_ticks "$server_pid"); tg0=$(cpu_ticks "${tgt_pids[@]}"); t0=$(date +%s.%N)
      qemu-img bench -f raw -q "$@" "$url" >/dev/null
      t1=$(date +%s.%N)
      bytes=$(( count * bufsize ))
      python3 - "$name" "${array_names[$lun]}" "$round" "$t0" "$t1" "$bytes" \
          "$(( $(cpu_ticks "$server_pid") - gw0 ))" "$(( $(cpu_ticks "${tgt_pids[@]}") - tg0 ))" "$(getconf CLK_TCK)" <<'PY'
import sys
name, members, rnd, t0, t1, nbytes, gw, tg, hz = sys.argv[1:]
secs = float(t1) - float(t0); gib = int(nbytes) / 2**30
print(f"{name:<24} {members:<7} {rnd:>5} {int(nbytes)/secs/1e6:9.1f} {int(gw)/int(hz)*1000/gib:12.0f} {int(tg)/int(hz)*1000/gib:12.0f}")
PY
    done
  done
}

# name read|write: RANDOM_SECONDS of random 4 KiB requests at queue depth 32 on each LUN in turn, twice; MB/s by
# the tool's own clock (the soak's JVM start is not in it), CPU per GiB over the whole run of the tool
random_job() {
  local name=$1 kind=$2
  local lun
  for round in 1 2; do
    for lun in 0 1 2; do
      local url="iscsi://127.0.0.1:$port/$iqn/$lun"
      local gw0 tg0 out bytes
      gw0=$(cpu_ticks "$server_pid"); tg0=$(cpu_ticks "${tgt_pids[@]}")
      if [ "$kind" = read ]; then
        out=$(iscsi-perf -r -b 8 -m 32 -t "$random_seconds" "$url" 2>&1 | tr '\r' '\n')
        bytes=$(python3 -c 'import re,sys; m=re.findall(r"iops average (\d+)", sys.stdin.read()); print(int(m[-1]) * 4096 * int(sys.argv[1]))' \
            "$random_seconds" <<<"$out")
      else
        out=$(java -jar "$jar" soak --url "$url" --read-percent 0 --max-io 4K -q 32 --sync-every 0 \
            --duration "${random_seconds}s" --report-every 1h 2>&1)
        bytes=$(python3 -c 'import re,sys; m=re.search(r"written (\d+) blocks", sys.stdin.read().split("soak PASSED")[-1]); print(int(m.group(1)) * 4096)' <<<"$out")
      fi
      python3 - "$name" "${array_names[$lun]}" "$round" "$random_seconds" "$bytes" \
          "$(( $(cpu_ticks "$server_pid") - gw0 ))" "$(( $(cpu_ticks "${tgt_pids[@]}") - tg0 ))" "$(getconf CLK_TCK)" <<'PY'
import sys
name, members, rnd, secs, nbytes, gw, tg, hz = sys.argv[1:]
gib = int(nbytes) / 2**30
print(f"{name:<24} {members:<7} {rnd:>5} {int(nbytes)/float(secs)/1e6:9.1f} {int(gw)/int(hz)*1000/gib:12.0f} {int(tg)/int(hz)*1000/gib:12.0f}")
PY
    done
  done
}

array_names=(local remote crc32c)
random_seconds=${RANDOM_SECONDS:-15}
printf '%-24s %-7s %5s %9s %12s %12s\n' job members round MB/s "gw CPU ms/GiB" "tgtd CPU ms/GiB"
count=512; bufsize=1048576
job "seq write 1MiB QD16" -w -c $count -d 16 -s $bufsize
job "seq read 1MiB QD16" -c $count -d 16 -s $bufsize
count=8192; bufsize=4096
job "4KiB write/MiB QD32" -w -c $count -d 32 -s $bufsize -S 1052672
job "4KiB read/MiB QD32" -c $count -d 32 -s $bufsize -S 1052672
random_job "4KiB random read QD32" read
random_job "4KiB random write QD32" write
echo "scratch: $dir"
