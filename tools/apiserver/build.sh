#!/usr/bin/env bash
# Builds kube-apiserver and etcd for internal/testrig/kube into a cache directory
# outside the repository, only when they are missing there:
#
#   ${PEERAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peeragent}/apiserver-<k8s>-etcd-<etcd>/
#
# The versions are the ones this directory's go.mod pins. Prints the directory
# on stdout (progress goes to stderr); exits non-zero, saying why, when the
# build fails. A cold build takes minutes and ~3 GB of memory; a cached one is
# instant. Concurrent runs wait for each other (flock) instead of building twice.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}

modversion() { awk -v m="$1" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }' "$here/go.mod"; }
k8s=$(modversion k8s.io/kubernetes)
etcd=$(modversion go.etcd.io/etcd/server/v3)
if [ -z "$k8s" ] || [ -z "$etcd" ]; then
	echo "apiserver: cannot read versions from $here/go.mod" >&2
	exit 1
fi

cache=${PEERAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peeragent}
dest="$cache/apiserver-$k8s-etcd-$etcd"

have() { [ -x "$dest/kube-apiserver" ] && [ -x "$dest/etcd" ]; }
if have; then
	echo "$dest"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.apiserver.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if have; then # built by a concurrent run while we waited
	echo "$dest"
	exit 0
fi

tmp=$(mktemp -d "$cache/.apiserver-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

minor=${k8s#v1.}
minor=${minor%%.*}
ver=k8s.io/component-base/version
ldflags="-s -w -X $ver.gitVersion=$k8s -X $ver.gitMajor=1 -X $ver.gitMinor=$minor"
ldflags="$ldflags -X $ver.gitTreeState=clean"

echo "apiserver: building kube-apiserver $k8s and etcd $etcd into $dest (cold: several minutes)" >&2
start=$(date +%s)
cd "$here"
export GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
"$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
"$GO" build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
"$tmp/kube-apiserver" --version >&2
# sed reads to the end: with head, etcd could die of SIGPIPE, and pipefail
# would fail a good build at random.
"$tmp/etcd" --version | sed -n 1p >&2

rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "apiserver: built in $(($(date +%s) - start)) s" >&2
echo "$dest"
