#!/usr/bin/env bash
# The GoBGP floor, every release side by side: a bare loop of
# AddPeer, in-place UpdatePeer, session-resetting UpdatePeer and DeletePeer at
# 1,000 and 10,000 neighbors, and the heap per neighbor with the speaker, on
# GoBGP v3.37.0, v4.3.0 (before the 2,048-shard Adj-RIB-In, a memory
# reference), v4.7.0 and v4.8.0. No agent code. `make floor` runs it.
#
# Writes, in the current directory: floor.txt (benchmark format), floor-stat.txt
# (benchstat, one column per release), floor-table.md (the markdown table of
# docs/performance.md) and floor-loadavg.txt; prints the table.
#
# Environment: COUNT_1K (runs at 1,000 neighbors, default 3), COUNT_10K_V4
# (default 3), COUNT_10K_V3 (default 1: v3 takes ~1 min to configure 10,000
# neighbors), CALLS (UpdatePeer/DeletePeer calls per run, default 1000),
# SIZES (default "1000 10000"), GOMEMLIMIT (default 7GiB: v4.7+ holds ~5 GiB
# live at 10,000 dual-stack neighbors; the limit keeps the peak near that on a
# shared machine instead of the default 2x). ~10 min on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
export GOFLAGS=${GOFLAGS:--mod=mod}
export GOMEMLIMIT=${GOMEMLIMIT:-7GiB}
BENCHSTAT=${BENCHSTAT:-"env GOFLAGS= $GO run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"}
COUNT_1K=${COUNT_1K:-3}
COUNT_10K_V4=${COUNT_10K_V4:-3}
COUNT_10K_V3=${COUNT_10K_V3:-1}
CALLS=${CALLS:-1000}
SIZES=${SIZES:-"1000 10000"}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# One binary per release: v3/ on go.mod, v4/ on go.mod (v4.8.0) and on its
# go.v47.mod / go.v43.mod.
(cd "$here/v3" && $GO build -o "$bin/v3.37.0" .)
(cd "$here/v4" && $GO build -o "$bin/v4.8.0" . &&
	$GO build -modfile go.v47.mod -o "$bin/v4.7.0" . &&
	$GO build -modfile go.v43.mod -o "$bin/v4.3.0" .)

start=$(date +%s)
echo "before: $(cat /proc/loadavg)" | tee floor-loadavg.txt
: > floor.txt
header=true
for v in v3.37.0 v4.3.0 v4.7.0 v4.8.0; do
	for n in $SIZES; do
		count=$COUNT_1K
		if [ "$n" -gt 1000 ]; then
			count=$COUNT_10K_V4
			[ "$v" = v3.37.0 ] && count=$COUNT_10K_V3
		fi
		echo "# $v, $n neighbors, ipv4, count $count" >&2
		"$bin/$v" -header=$header -neighbors "$n" -count "$count" -calls "$CALLS" -families ipv4 | tee -a floor.txt
		header=false
		# Dual stack: only what the second family changes (configuring and
		# memory); one run at 10,000.
		[ "$n" -gt 1000 ] && count=1
		echo "# $v, $n neighbors, ipv4+ipv6, count $count" >&2
		"$bin/$v" -header=false -neighbors "$n" -count "$count" -families ipv4+ipv6 -ops add,heap | tee -a floor.txt
	done
done
echo "after: $(cat /proc/loadavg)" | tee -a floor-loadavg.txt
echo "elapsed: $(( $(date +%s) - start )) s" | tee -a floor-loadavg.txt

$BENCHSTAT -col /gobgp floor.txt > floor-stat.txt
(cd "$here" && $GO run ./table "$OLDPWD/floor.txt") > floor-table.md
cat floor-table.md
