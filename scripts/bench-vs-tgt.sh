#!/usr/bin/env bash
# stripestack vs tgtd serving the same file to the same client (fio's libiscsi engine), one after the other in
# one run: sequential 1 MiB write and read at queue depth 16, random 4 KiB write and read at queue depth 32.
# Prints MiB/s, IOPS and the target process's CPU per job, and the stripestack/tgtd ratio. 127.0.0.1 only.
# Results and how they were taken: docs/performance.md ("stripestack vs tgtd").
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/bench-vs-tgt.sh [-f FIO] [-s SIZE] [-r SECONDS] [-p PORT] [-d DIR] [-j JAR]
  -f FIO      fio built with the libiscsi engine (Debian's fio lacks it; default: $FIO, then fio on PATH if it has it)
  -s SIZE     size of the shared backing file (default 1G)
  -r SECONDS  run time of each job (default 15)
  -p PORT     port both targets listen on, one after the other (default 3281)
  -d DIR      scratch directory (default a new one under /tmp)
  -j JAR      stripestack jar (default: bin/stripestack, which builds it when needed)
USAGE
}

root="$(cd "$(dirname "$0")/.." && pwd)"
fio="${FIO:-}"; size=1G; runtime=15; port=3281; dir=""; jar=""
while getopts ":f:s:r:p:d:j:h" opt; do
  case "$opt" in
    f) fio="$OPTARG" ;; s) size="$OPTARG" ;; r) runtime="$OPTARG" ;; p) port="$OPTARG" ;;
    d) dir="$OPTARG" ;; j) jar="$OPTARG" ;; *) usage; exit 2 ;;
  esac
done
[ -n "$fio" ] || fio="$(command -v fio || true)"
if [ -z "$fio" ] || ! "$fio" --enghelp 2>/dev/null | grep -qw libiscsi; then
  echo "bench-vs-tgt: need fio with the libiscsi engine (-f FIO); Debian's fio package is built without it" >&2
  exit 2
fi
for tool in tgtd tgtadm python3; do
  command -v "$tool" >/dev/null || { echo "bench-vs-tgt: $tool not found (Debian: apt-get install tgt python3)" >&2; exit 2; }
done
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "bench-vs-tgt: something already listens on 127.0.0.1:$port; pick another with -p" >&2; exit 2
fi
if tgtadm -C "$port" --op show --mode sys >/dev/null 2>&1; then
  echo "bench-vs-tgt: a tgtd this script did not start holds control port $port; pick another with -p" >&2; exit 2
fi
[ -n "$dir" ] || dir="$(mktemp -d /tmp/bench-vs-tgt.XXXXXX)"
mkdir -p "$dir"
file="$dir/lun.img"
iqn_s="iqn.2026-11.io.stripestack:bench"
iqn_t="iqn.2026-11.io.stripestack:tgtbench"
target_pid=""
# the tgtd this script started, once it runs: the only one it stops (tgtadm -C PORT would reach whichever tgtd
# holds that control port, which may be someone else's)
tgtd_pid=""

cleanup() {
  if [ -n "$target_pid" ] && [ "$target_pid" != "$tgtd_pid" ] && kill -0 "$target_pid" 2>/dev/null; then
    kill "$target_pid" 2>/dev/null || true
  fi
  if [ -n "$tgtd_pid" ] && kill -0 "$tgtd_pid" 2>/dev/null; then
    # tgtd ignores SIGTERM, and the benchmark's target holds nothing to save
    kill -KILL "$tgtd_pid" 2>/dev/null || true
  fi
  tgtd_pid=""
}
trap cleanup EXIT

# wait_port SECONDS (bin/stripestack may build the jar first)
wait_port() {
  for _ in $(seq 1 $(( $1 * 10 ))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench-vs-tgt: nothing listens on 127.0.0.1:$port after $1 s (logs in $dir)" >&2; return 1
}

# fio splits --filename at every ':' unless it is escaped, the IQN's included
fio_url() { printf '%s' "$1" | sed 's/:/\\:/g'; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_jobs LABEL URL: the four jobs, one JSON file each
run_jobs() {
  local label="$1" url="$2" job name rw bs qd before after start end
  for job in seqwrite:write:1M:16 seqread:read:1M:16 randwrite:randwrite:4k:32 randread:randread:4k:32; do
    IFS=: read -r name rw bs qd <<<"$job"
    before=$(cpu_ticks "$target_pid"); start=$(date +%s%N)
    "$fio" --name="$name" --ioengine=libiscsi --filename="$url" --rw="$rw" --bs="$bs" --iodepth="$qd" \
      --size="$size" --time_based --runtime="$runtime" --ramp_time=2 --randrepeat=0 --norandommap \
      --output-format=json --output="$dir/$label-$name.json" >/dev/null
    after=$(cpu_ticks "$target_pid"); end=$(date +%s%N)
    echo "$(( (after - before) * 1000 / $(getconf CLK_TCK) )) $(( (end - start) / 1000000 ))" > "$dir/$label-$name.cpu"
  done
}

echo "bench-vs-tgt: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), file $file ($size), $runtime s per job"
truncate -s "$size" "$file"
dd if=/dev/urandom of="$file" bs=1M count="$(( $(stat -c %s "$file") / 1048576 ))" conv=notrunc status=none

cat > "$dir/stripestack.yaml" <<YAML
data_dir: $dir
server: {portals: ["127.0.0.1:$port"], admin_socket: $dir/admin.sock}
targets:
  - iqn: $iqn_s
    luns: [{lun: 0, file: $file}]
YAML
if [ -n "$jar" ]; then
  java -jar "$jar" serve --config "$dir/stripestack.yaml" > "$dir/stripestack.log" 2>&1 &
else
  "$root/bin/stripestack" serve --config "$dir/stripestack.yaml" > "$dir/stripestack.log" 2>&1 &
fi
target_pid=$!
wait_port 600
# bin/stripestack execs java, so $! is the JVM itself
run_jobs stripestack "$(fio_url "iscsi://127.0.0.1:$port/$iqn_s/0")"
kill "$target_pid"; wait "$target_pid" 2>/dev/null || true

setsid tgtd -f -C "$port" --iscsi "portal=127.0.0.1:$port" > "$dir/tgtd.log" 2>&1 < /dev/null &
# a script's background job leads no process group, so setsid execs tgtd in place: $! is tgtd itself
target_pid=$!
tgtd_pid=$target_pid
for _ in $(seq 1 50); do tgtadm -C "$port" --op show --mode sys >/dev/null 2>&1 && break; sleep 0.1; done
tgtadm -C "$port" --lld iscsi --op new --mode target --tid 1 -T "$iqn_t"
tgtadm -C "$port" --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 -b "$file"
tgtadm -C "$port" --lld iscsi --op bind --mode target --tid 1 -I ALL
wait_port 20
run_jobs tgtd "$(fio_url "iscsi://127.0.0.1:$port/$iqn_t/1")"
cleanup
wait "$target_pid" 2>/dev/null || true
target_pid=""

python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
def result(label, name):
    j = json.load(open(os.path.join(d, f"{label}-{name}.json")))["jobs"][0]
    side = j["write"] if "write" in name else j["read"]
    cpu_ms, wall_ms = (int(x) for x in open(os.path.join(d, f"{label}-{name}.cpu")).read().split())
    return side["bw_bytes"] / 2**20, side["iops"], 100.0 * cpu_ms / max(wall_ms, 1)
print(f"{'job':<10} {'stripestack MiB/s':>18} {'IOPS':>8} {'cpu%':>6} {'tgtd MiB/s':>11} {'IOPS':>8} {'cpu%':>6} {'ratio':>6}")
for name in ["seqwrite", "seqread", "randwrite", "randread"]:
    s = result("stripestack", name); t = result("tgtd", name)
    print(f"{name:<10} {s[0]:>18.1f} {s[1]:>8.0f} {s[2]:>6.0f} {t[0]:>11.1f} {t[1]:>8.0f} {t[2]:>6.0f} {s[0]/t[0]:>6.2f}")
print("(cpu% = target process CPU in % of one core over the whole fio run, ramp included; ratio = stripestack / tgtd MiB/s)")
PY
echo "raw fio output: $dir"
