# make-fixtures.cmd - runs INSIDE the ../shared/tools/vm guest (Linux 6.1, mdadm 4.2), via
#   VM_DISK_FILES="ppl-clean-{0..3}.img bitmap-{0..3}.img reshape-{0..4}.img ppl-powercut-{0..3}.img" \
#   VM_TIMEOUT=900 run.sh make-fixtures.cmd
# (17 files of FIXTURE_MB MiB each, zero-filled, attached in that order as serial fx0..fx16).
# Makes the kernel-made arrays stripestack's KernelFixturesTest opens. The array content is a pattern
# every 4 KiB array block of which says what it is: "GG:BBBBBBBBBBBB\n" (generation GG, array block
# number B, 16 bytes) repeated 256 times; every array is filled with generation 00 first.
#   ppl-clean    4 members, 64 KiB chunk, --consistency-policy=ppl, filled, stopped cleanly
#   bitmap       4 members, 64 KiB chunk, internal bitmap, filled, stopped cleanly
#   reshape      4 members + 1 added, filled, --grow --raid-devices=5, stopped mid-reshape
#   ppl-powercut 4 members, ppl, filled, then 4 writers rewrite random blocks as generation 01
#                (O_DIRECT, 1-8 blocks each) until the power is cut (sysrq b): the run ends there
set -u
modprobe -a md-mod raid456 || exit 1
echo "== kernel $(uname -r); $(mdadm --version 2>&1)"
dev() { for b in /sys/block/vd*; do [ "$(cat $b/serial 2>/dev/null)" = fx$1 ] && echo /dev/${b##*/}; done; }
devs() { local out=() i; for i in $(seq $1 $2); do out+=("$(dev $i)"); done; echo "${out[@]}"; }
pattern() { # pattern GEN FIRST COUNT: COUNT blocks from array block FIRST on
  mawk -v g="$1" -v f="$2" -v n="$3" 'BEGIN { for (b = f; b < f + n; b++) { s = sprintf("%02d:%012d\n", g, b);
    t = s s s s s s s s s s s s s s s s; u = t t t t t t t t t t t t t t t t; printf "%s", u } }'
}
fill() { # fill MD: generation 00 over the whole array
  local blocks=$(( $(blockdev --getsize64 $1) / 4096 ))
  pattern 0 0 $blocks | dd of=$1 bs=1M iflag=fullblock oflag=direct status=none || exit 3
  echo "filled $1: $blocks blocks"
}
show() { echo "== $1"; mdadm --detail $2 | grep -E 'Version|Level|Array Size|Raid Devices|Chunk|Consistency|State :|Reshape|Delta|New'
  mdadm --examine $(devs $3 $4) | grep -E '^/dev|Feature Map|Data Offset|New Offset|PPL|Bitmap|Reshape|Delta|New Chunk|Events|Device Role|Array State'; }
M="--run --metadata=1.2 --level=5 --chunk=64"
echo 0 > /proc/sys/dev/raid/speed_limit_min

mdadm --create /dev/md0 $M --raid-devices=4 --consistency-policy=ppl --assume-clean $(devs 0 3) 2>&1 || exit 2
fill /dev/md0; show ppl-clean /dev/md0 0 3; mdadm --stop /dev/md0

mdadm --create /dev/md0 $M --raid-devices=4 --bitmap=internal --assume-clean $(devs 4 7) 2>&1 || exit 2
fill /dev/md0; show bitmap /dev/md0 4 7; mdadm --stop /dev/md0

mdadm --create /dev/md0 $M --raid-devices=4 --assume-clean $(devs 8 11) 2>&1 || exit 2
fill /dev/md0; mdadm --add /dev/md0 $(dev 12) 2>&1
echo 200 > /proc/sys/dev/raid/speed_limit_max
mdadm --grow /dev/md0 --raid-devices=5 2>&1 || exit 4
for i in $(seq 1 600); do
  pos=$(cat /sys/block/md0/md/reshape_position); [ "$pos" != none ] && [ "$pos" -ge 4096 ] && break; sleep 0.2
done
echo frozen > /sys/block/md0/md/sync_action
echo "reshape stopped at $(cat /sys/block/md0/md/reshape_position) (array sectors)"
show reshape /dev/md0 8 12; mdadm --stop /dev/md0
echo 200000 > /proc/sys/dev/raid/speed_limit_max

mdadm --create /dev/md0 $M --raid-devices=4 --consistency-policy=ppl --assume-clean $(devs 13 16) 2>&1 || exit 2
fill /dev/md0; show ppl-powercut /dev/md0 13 16
BLOCKS=$(( $(blockdev --getsize64 /dev/md0) / 4096 ))
writer() { while :; do n=$(( RANDOM % 8 + 1 )); b=$(( (RANDOM * 32768 + RANDOM) % (BLOCKS - n) ));
  pattern 1 $b $n | dd of=/dev/md0 bs=4096 seek=$b count=$n oflag=direct iflag=fullblock status=none; done; }
for w in 1 2 3 4; do writer & done
sleep 6
echo "cutting the power under 4 writers"; sleep 0.1
echo b > /proc/sysrq-trigger
