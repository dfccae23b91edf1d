#!/usr/bin/env bash
# kernel-interop.sh - arrays stripestack wrote, opened by the real Linux md driver (not run in CI: it boots the
# kernel of ../shared/tools/vm under QEMU, a few minutes under TCG).
#
# On the host, stripestack (bin/stripestack's jar) serves one array per scenario over iSCSI on 127.0.0.1; qemu-io
# (libiscsi) writes a pattern through it: 64 KiB region i of generation g is the byte ((7 i + 101 g) mod 255) + 1.
#   ppl-clean   4 x 12 MiB, 64 KiB chunk, ppl (the default), generation 0 everywhere, stopped cleanly (SIGTERM)
#   ppl-kill    the same, then generation 1 over random regions from 4 writers, SIGKILL under them
#   grow-kill   4 members + 1 spare, ppl, generation 0, raid_disks 5 paced, SIGKILL mid-reshape
#   chunk-kill  4 members, ppl, generation 0, chunk_size 32768 paced, SIGKILL mid-reshape
# Then, in the guest, with copies of the member files attached: mdadm --assemble each (ppl-clean and ppl-kill also
# without member 1, degraded), --readwrite, let a reshape finish, compare the array byte by byte with what it must
# hold (the pattern; for ppl-kill what stripestack itself reads from another copy, checked block by block here),
# and run check: mismatch_cnt must be 0.
#
# Usage: scripts/kernel-interop.sh [OUT]   (OUT: where the run's report goes, default docs/kernel-interop.out)
# Needs: ../shared/tools/vm built (build.sh), qemu-io with libiscsi, mdadm, python3, a built jar (bin/stripestack).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
vm="${VM_TOOLS:-}"
for d in "$root/../shared/tools/vm" "$root/../../shared/tools/vm"; do [ -z "$vm" ] && [ -x "$d/run.sh" ] && vm="$d"; done
[ -n "$vm" ] || { echo "kernel-interop: ../shared/tools/vm not found; set VM_TOOLS" >&2; exit 2; }
out="${1:-$root/docs/kernel-interop.out}"
jar="$root/cli/target/stripestack.jar"
[ -f "$jar" ] || { echo "kernel-interop: $jar missing: run bin/stripestack once (it builds the jar)" >&2; exit 2; }
W="$(mktemp -d /tmp/kernel-interop.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}" $(cat "$W"/*/pid 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
IQN=iqn.2026-11.io.stripestack:interop
MEMBER_MB=12

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# region_bytes G FIRST COUNT: qemu-io commands writing generation G over COUNT 64 KiB regions from FIRST
qio_cmds() { local g=$1 i; for i in $(seq "$2" $(($2 + $3 - 1))); do
  printf -- '-c\nwrite -P %d %d 65536\n' $(( (7 * i + 101 * g) % 255 + 1 )) $(( i * 65536 )); done; }

# serve NAME SPARE: starts stripestack on a fresh directory, prints its port; the pid goes to $W/NAME/pid
serve() {
  local name=$1 spare=$2 dir="$W/$1" port
  port=$(free_port)
  mkdir -p "$dir"
  cat > "$dir/conf.yaml" <<EOF
data_dir: $dir
server:
  admin_socket: $dir/ctl.sock
  portals: ["127.0.0.1:$port"]
arrays:
  md0:
    members: [m0.img, m1.img, m2.img, m3.img]
    create_member_size: ${MEMBER_MB}MiB
    create_sparse: true
    chunk: 64KiB
$( [ "$spare" = yes ] && echo "    spares: [m4.img]" )
targets:
  - iqn: $IQN
    luns:
      - lun: 0
        array: md0
EOF
  java -jar "$jar" serve --config "$dir/conf.yaml" > "$dir/server.log" 2>&1 &
  echo $! > "$dir/pid"   # (a subshell: cleanup finds it there)
  for _ in $(seq 1 200); do
    iscsi-ls "iscsi://127.0.0.1:$port" > /dev/null 2>&1 && { echo "$port"; return; }
    sleep 0.2
  done
  echo "kernel-interop: $name: the server did not come up; its log:" >&2; cat "$dir/server.log" >&2; exit 3
}
stop_clean() { local p; p=$(cat "$W/$1/pid"); kill -TERM "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.2; done; }
ctl() { java -jar "$jar" ctl --config "$W/$1/conf.yaml" "${@:2}"; }
url() { echo "iscsi://127.0.0.1:$1/$IQN/0"; }
array_bytes() { qemu-img info --output=json "$(url "$1")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["virtual-size"])'; }

# fill NAME PORT: generation 0 over the whole array; prints the array's size
fill() {
  local bytes; bytes=$(array_bytes "$2")
  mapfile -t c < <(qio_cmds 0 0 $(( bytes / 65536 )))
  qemu-io -f raw "${c[@]}" "$(url "$2")" > /dev/null
  echo "$bytes"
}

# expect_sha G BYTES: sha256 of generation G over BYTES
expect_sha() { python3 - "$1" "$2" <<'EOF'
import hashlib, sys
g, n = int(sys.argv[1]), int(sys.argv[2])
h = hashlib.sha256()
for i in range(n // 65536):
    h.update(bytes([(7 * i + 101 * g) % 255 + 1]) * 65536)
print(h.hexdigest())
EOF
}

copy_set() { # copy_set NAME SET [LEAVE_OUT_ROLE]: member copies for the guest, in role order
  local src="$W/$1" dst="$W/$2" n r
  mkdir -p "$dst"
  n=$(ls "$src"/m*.img | wc -l)
  for r in $(seq 0 $((n - 1))); do
    [ "${3:-}" = "$r" ] && continue
    cp --sparse=always "$src/m$r.img" "$dst/m$r.img"
    files+=("$dst/m$r.img")
  done
}

report() { echo "$*" | tee -a "$W/report"; }
files=()
report "== kernel-interop at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . || echo ' (with uncommitted changes)'), $(date -u +%Y-%m-%dT%H:%MZ)"

# ---- ppl-clean
port=$(serve ppl-clean no)
clean_bytes=$(fill ppl-clean "$port")
stop_clean ppl-clean
report "ppl-clean: $clean_bytes bytes, stopped cleanly; feature map $(mdadm --examine "$W/ppl-clean/m0.img" | awk '/Feature Map/ {print $4}')"
copy_set ppl-clean ppl-clean-full
copy_set ppl-clean ppl-clean-degraded 1

# ---- ppl-kill
port=$(serve ppl-kill no)
kill_bytes=$(fill ppl-kill "$port")
regions=$(( kill_bytes / 65536 ))
for w in 1 2 3 4; do
  ( for k in $(seq 1 200); do i=$(( (RANDOM * 32768 + RANDOM) % regions ))
      mapfile -t c < <(qio_cmds 1 "$i" 1); timeout -s KILL 20 qemu-io -f raw "${c[@]}" "$(url "$port")" > /dev/null 2>&1 || exit 0
    done ) &
  pids+=($!)
done
sleep 3
kill -9 "$(cat "$W/ppl-kill/pid")"
wait "${pids[@]: -4}" 2>/dev/null || true
report "ppl-kill: $kill_bytes bytes, SIGKILL under 4 writers; state $(mdadm --examine "$W/ppl-kill/m0.img" | awk '/^ *State :/ {print $3}')"
copy_set ppl-kill ppl-kill-full
copy_set ppl-kill ppl-kill-degraded 1
# what stripestack reads from the same files (its own replay), checked: each block generation 0 or 1
mkdir -p "$W/ours"
cp --sparse=always "$W"/ppl-kill/m*.img "$W/ours/"
port=$(free_port)
sed -e "s#$W/ppl-kill#$W/ours#g" -e "s#127.0.0.1:[0-9]*#127.0.0.1:$port#" "$W/ppl-kill/conf.yaml" > "$W/ours/conf.yaml"
java -jar "$jar" serve --config "$W/ours/conf.yaml" > "$W/ours/server.log" 2>&1 & echo $! > "$W/ours/pid"
for _ in $(seq 1 200); do iscsi-ls "iscsi://127.0.0.1:$port" > /dev/null 2>&1 && break; sleep 0.2; done
qemu-img convert -f raw -O raw "$(url "$port")" "$W/ours.raw"
stop_clean ours
grep -o 'partial parity log replayed at start: [^;]*' "$W/ours/server.log" | head -1 | sed 's/^/ppl-kill: stripestack: /' | tee -a "$W/report"
kill_check=$(python3 - "$W/ours.raw" "$kill_bytes" <<'EOF'
import hashlib, sys
data = open(sys.argv[1], 'rb').read()[:int(sys.argv[2])]
new = 0
for i in range(len(data) // 65536):
    r = data[i * 65536:(i + 1) * 65536]
    g0, g1 = (7 * i) % 255 + 1, (7 * i + 101) % 255 + 1
    for b in range(0, 65536, 4096):
        blk = r[b:b + 4096]
        if blk == bytes([g1]) * 4096:
            new += 1
        elif blk != bytes([g0]) * 4096:
            sys.exit("region %d block %d is neither generation" % (i, b // 4096))
print(hashlib.sha256(data).hexdigest())
print("ppl-kill: stripestack reads every 4 KiB block as generation 0 or 1 (%d blocks of generation 1)" % new)
EOF
)
kill_sha=$(echo "$kill_check" | head -1)
report "$(echo "$kill_check" | tail -1)"
report "ppl-kill: stripestack's read of the same files: sha256 $kill_sha"

# ---- grow-kill and chunk-kill: SIGKILL mid-reshape
reshape_kill() { # NAME SPARE ATTRIBUTE VALUE
  local port bytes
  port=$(serve "$1" "$2")
  bytes=$(fill "$1" "$port")
  ctl "$1" set md0/sync_speed_max 2000 > /dev/null
  # force: the arrays keep a partial parity log, which md drops while it reshapes (resync meanwhile)
  ctl "$1" set "md0/$3" "$4 force" > /dev/null
  for _ in $(seq 1 300); do
    done_s=$(ctl "$1" get md0/sync_completed | awk '{print $1}')
    [ "$done_s" != none ] && [ "$done_s" -ge 4096 ] && break
    sleep 0.1
  done
  kill -9 "$(cat "$W/$1/pid")"
  report "$1: $bytes bytes, $3 -> $4, SIGKILL at $done_s sectors: $(mdadm --examine "$W/$1/m0.img" | grep -E "Feature Map|Reshape pos|New Offset|New Chunk|Delta" | tr -s ' ' | tr '\n' ';')"
  eval "${1//-/_}_bytes=$bytes"
  copy_set "$1" "$1-copy"
}
reshape_kill grow-kill yes raid_disks 5
reshape_kill chunk-kill no chunk_size 32768

# ---- the guest
cat > "$W/guest.cmd" <<EOF
set -u
modprobe -a md-mod raid456 || exit 1
echo "guest: kernel \$(uname -r), \$(mdadm --version 2>&1)"
echo 0 > /proc/sys/dev/raid/speed_limit_min; echo 500000 > /proc/sys/dev/raid/speed_limit_max
dev() { for b in /sys/block/vd*; do [ "\$(cat \$b/serial 2>/dev/null)" = fx\$1 ] && echo /dev/\${b##*/}; done; }
devs() { local o=() i; for i in \$(seq \$1 \$2); do o+=("\$(dev \$i)"); done; echo "\${o[@]}"; }
fails=0
verify() { # NAME FIRST LAST BYTES SHA RESHAPE
  echo "== \$1"
  mdadm --assemble /dev/md0 --run \$(devs \$2 \$3) 2>&1 | sed 's/^/  /'
  [ -e /sys/block/md0/md/array_state ] || { echo "  FAIL: not assembled"; fails=\$((fails+1)); return; }
  mdadm --readwrite /dev/md0 2>/dev/null
  if [ "\$6" = yes ]; then
    for i in \$(seq 1 900); do [ "\$(cat /sys/block/md0/md/sync_action)" = idle ] && [ "\$(cat /sys/block/md0/md/reshape_position)" = none ] && break; sleep 1; done
    echo "  reshape: \$(cat /sys/block/md0/md/reshape_position), raid_disks \$(cat /sys/block/md0/md/raid_disks), chunk \$(cat /sys/block/md0/md/chunk_size)"
  fi
  grep -A2 '^md0' /proc/mdstat | sed 's/^/  /'
  dmesg | grep -E 'md/raid:md0:.*(dirty|ppl|PPL|recover)' | sed 's/^\[[ 0-9.]*\] /  kernel: /'
  dmesg -C
  echo "  consistency_policy \$(cat /sys/block/md0/md/consistency_policy), array_state \$(cat /sys/block/md0/md/array_state), degraded \$(cat /sys/block/md0/md/degraded)"
  got=\$(head -c \$4 /dev/md0 | sha256sum | cut -d' ' -f1)
  if [ "\$got" = "\$5" ]; then echo "  content: byte-exact (\$4 bytes)"; else echo "  FAIL: content sha256 \$got, expected \$5"; fails=\$((fails+1)); fi
  if [ "\$(cat /sys/block/md0/md/degraded)" = 0 ]; then
    echo check > /sys/block/md0/md/sync_action
    for i in \$(seq 1 900); do [ "\$(cat /sys/block/md0/md/sync_action)" = idle ] && break; sleep 1; done
    mm=\$(cat /sys/block/md0/md/mismatch_cnt); echo "  check: mismatch_cnt \$mm"
    [ "\$mm" = 0 ] || fails=\$((fails+1))
  fi
  mdadm --stop /dev/md0 > /dev/null 2>&1
}
EOF
i=0
add_verify() { # NAME COUNT BYTES SHA RESHAPE
  echo "verify $1 $i $((i + $2 - 1)) $3 $4 $5" >> "$W/guest.cmd"; i=$((i + $2)); }
sha0=$(expect_sha 0 "$clean_bytes")
add_verify ppl-clean 4 "$clean_bytes" "$sha0" no
add_verify ppl-clean-degraded 3 "$clean_bytes" "$sha0" no
add_verify ppl-kill 4 "$kill_bytes" "$kill_sha" no
add_verify ppl-kill-degraded 3 "$kill_bytes" "$kill_sha" no
add_verify grow-kill 5 "$grow_kill_bytes" "$(expect_sha 0 "$grow_kill_bytes")" yes
add_verify chunk-kill 4 "$chunk_kill_bytes" "$(expect_sha 0 "$chunk_kill_bytes")" yes
echo 'echo "guest: $fails failure(s)"; exit $fails' >> "$W/guest.cmd"
set +e
VM_DISK_FILES="${files[*]}" VM_TIMEOUT="${VM_TIMEOUT:-1500}" "$vm/run.sh" "$W/guest.cmd" 2>&1 | tr -d '\r' | tee -a "$W/report"
rc=${PIPESTATUS[0]}
set -e
report "== exit status $rc"
cp "$W/report" "$out"
echo "kernel-interop: report in $out" >&2
exit "$rc"
