#!/usr/bin/env bash
# Sequential against random writes over iSCSI (fio's libiscsi engine) on the default array (4 x 256 MiB members,
# chunk 512 KiB, page-cache member files), one job after the other in one run: random 4 KiB QD 32, sequential 4 KiB
# QD 1 / 4 / 32, sequential and random 64 KiB QD 8, sequential 64 KiB QD 4 and QD 64 (a stream with 4 MiB, 2.7 rows,
# outstanding: whether it becomes full rows depends on server.io_threads, -t). Prints IOPS, MiB/s and the RAID layer's
# full-row writes, partial-row writes and pre-reads per job (from the Prometheus endpoint), then the ratios the write
# path aims at. 127.0.0.1 only. Results and how they were taken: docs/performance.md ("Sequential writes").
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/bench-writes-iscsi.sh [-f FIO] [-c POLICY] [-t THREADS] [-r SECONDS] [-p PORT] [-m PORT] [-d DIR] [-j JAR]
  -f FIO      fio built with the libiscsi engine (Debian's fio lacks it: ../shared/tools/peer/build-fio-libiscsi.sh;
              default: $FIO, then fio on PATH if it has it)
  -c POLICY   consistency_policy of the array: bitmap (default), ppl or resync
  -t THREADS  server.io_threads, the commands the server runs at once (default 16, the server's default)
  -r SECONDS  run time of each job (default 10)
  -p PORT     iSCSI port (default 3283)
  -m PORT     Prometheus metrics port (default 9283)
  -d DIR      scratch directory (default a new one under /tmp)
  -j JAR      stripestack jar (default: bin/stripestack, which builds it when needed)
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
fio="${FIO:-}"; policy=bitmap; threads=16; runtime=10; port=3283; mport=9283; dir=""; jar=""
while getopts ":f:c:t:r:p:m:d:j:h" opt; do
  case "$opt" in
    f) fio="$OPTARG" ;; c) policy="$OPTARG" ;; t) threads="$OPTARG" ;; r) runtime="$OPTARG" ;; p) port="$OPTARG" ;; m) mport="$OPTARG" ;;
    d) dir="$OPTARG" ;; j) jar="$OPTARG" ;; *) usage; exit 2 ;;
  esac
done
[ -n "$fio" ] || fio="$(command -v fio || true)"
if [ -z "$fio" ] || ! "$fio" --enghelp 2>/dev/null | grep -qw libiscsi; then
  echo "bench-writes-iscsi: need fio with the libiscsi engine (-f FIO); Debian's fio package is built without it" >&2
  exit 2
fi
case "$policy" in bitmap|ppl|resync) ;; *) echo "bench-writes-iscsi: -c takes bitmap, ppl or resync" >&2; exit 2 ;; esac
command -v python3 >/dev/null || { echo "bench-writes-iscsi: python3 not found" >&2; exit 2; }
for p in "$port" "$mport"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "bench-writes-iscsi: something already listens on 127.0.0.1:$p; pick another with -p / -m" >&2; exit 2
  fi
done
[ -n "$dir" ] || dir="$(mktemp -d /tmp/bench-writes-iscsi.XXXXXX)"
mkdir -p "$dir"
iqn="iqn.2026-11.io.stripestack:writes"
target_pid=""

cleanup() {
  if [ -n "$target_pid" ] && kill -0 "$target_pid" 2>/dev/null; then
    kill "$target_pid" 2>/dev/null || true
    wait "$target_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

wait_port() {
  for _ in $(seq 1 $(( $1 * 10 ))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench-writes-iscsi: nothing listens on 127.0.0.1:$port after $1 s (logs in $dir)" >&2; return 1
}

# The RAID layer's counters (stripestack_array_<name>_total on the Prometheus endpoint): name value, one a line.
counters() {
  python3 - "$mport" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=30).read().decode()
for name in ("full_stripe_writes", "rmw_writes", "reconstruct_writes", "member_prereads"):
    total = 0
    for line in text.splitlines():
        if line.startswith(f"stripestack_array_{name}_total{{"):
            total += int(float(line.rsplit(" ", 1)[1]))
    print(name, total)
PY
}

cat > "$dir/stripestack.yaml" <<YAML
data_dir: $dir
server: {portals: ["127.0.0.1:$port"], admin_socket: $dir/admin.sock, metrics: "127.0.0.1:$mport", queue_depth: 128, io_threads: $threads}
arrays:
  md0:
    members: [member0.img, member1.img, member2.img, member3.img]
    create_member_size: 256MiB
    chunk: 512KiB
    layout: left-symmetric
    consistency_policy: $policy
targets:
  - iqn: $iqn
    luns: [{lun: 0, array: md0}]
YAML
echo "bench-writes-iscsi: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), policy $policy, io_threads $threads, $runtime s per job"
if [ -n "$jar" ]; then
  java -jar "$jar" serve --config "$dir/stripestack.yaml" > "$dir/stripestack.log" 2>&1 &
else
  "$root/bin/stripestack" serve --config "$dir/stripestack.yaml" > "$dir/stripestack.log" 2>&1 &
fi
target_pid=$!
wait_port 600
url="$(printf '%s' "iscsi://127.0.0.1:$port/$iqn/0" | sed 's/:/\\:/g')"

# The array's data once, in full rows, so that pre-reads read written blocks (as the bench's prefill).
"$fio" --name=prefill --ioengine=libiscsi --filename="$url" --rw=write --bs=1536k --iodepth=4 \
  --output-format=json --output="$dir/prefill.json" >/dev/null

jobs="rand4k-qd32:randwrite:4k:32 seq4k-qd1:write:4k:1 seq4k-qd4:write:4k:4 seq4k-qd32:write:4k:32"
jobs="$jobs seq64k-qd4:write:64k:4 seq64k-qd8:write:64k:8 rand64k-qd8:randwrite:64k:8 seq64k-qd64:write:64k:64"
for job in $jobs; do
  IFS=: read -r name rw bs qd <<<"$job"
  counters > "$dir/$name.before"
  "$fio" --name="$name" --ioengine=libiscsi --filename="$url" --rw="$rw" --bs="$bs" --iodepth="$qd" \
    --time_based --runtime="$runtime" --randrepeat=0 --norandommap \
    --output-format=json --output="$dir/$name.json" >/dev/null
  counters > "$dir/$name.after"
done
cleanup
target_pid=""

python3 - "$dir" "$policy" <<'PY'
import json, os, sys
d, policy = sys.argv[1], sys.argv[2]
def counters(name, when):
    return {k: int(v) for k, v in (l.split() for l in open(os.path.join(d, f"{name}.{when}")))}
rows = {}
print(f"{'job':<12} {'IOPS':>8} {'MiB/s':>8} {'full rows':>10} {'partial':>8} {'pre-reads':>10}")
for name in ["rand4k-qd32", "seq4k-qd1", "seq4k-qd4", "seq4k-qd32", "seq64k-qd4", "seq64k-qd8", "rand64k-qd8",
             "seq64k-qd64"]:
    w = json.load(open(os.path.join(d, f"{name}.json")))["jobs"][0]["write"]
    b, a = counters(name, "before"), counters(name, "after")
    delta = {k: a[k] - b[k] for k in a}
    rows[name] = w["iops"]
    print(f"{name:<12} {w['iops']:>8.0f} {w['bw_bytes'] / 2**20:>8.1f} {delta['full_stripe_writes']:>10} "
          f"{delta['rmw_writes'] + delta['reconstruct_writes']:>8} {delta['member_prereads']:>10}")
def goal(label, num, den, target):
    r = rows[num] / rows[den] if rows[den] else float("nan")
    print(f"  {label}: {r:.2f}x (goal >= {target}x: {'met' if r >= target else 'NOT met'})")
print(f"ratios, policy {policy}:")
goal("seq 4K QD32 / random 4K QD32", "seq4k-qd32", "rand4k-qd32", 2.5)
goal("seq 4K QD4 / seq 4K QD1", "seq4k-qd4", "seq4k-qd1", 2.0)
goal("seq 64K QD8 / random 64K QD8", "seq64k-qd8", "rand64k-qd8", 1.3)
PY
echo "raw fio output: $dir"
