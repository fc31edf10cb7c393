#!/usr/bin/env bash
# The library's vhost-user frontend against DPDK's own backend: testpmd with one net_vhost port
# in macswap mode returns every frame tests/interop/vu_peer.c sends, addresses swapped and
# every other byte intact.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
interop_init dpdk_vhost
need_peer_packages dpdk dpdk-dev
command -v dpdk-testpmd >/dev/null || interop_skip "dpdk-testpmd not installed"
build_vu_peer
testpmd "$WORK/testpmd.log" '0@0,1@1' --vdev "net_vhost0,iface=$WORK/vhost.sock,queues=1" \
  -- --forward-mode=macswap --stats-period=1 --total-num-mbufs=8192 -a
wait_for "[ -S $WORK/vhost.sock ] && grep -aqs 'Rx-pps' $WORK/testpmd.log" 40 || fail "net_vhost testpmd did not start"
timeout 60 "$WORK/vu_peer" "$WORK/vhost.sock" 20000 || fail "frames did not all come back"
echo "dpdk_vhost: PASS in ${SECONDS}s"
