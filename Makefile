# peeragent
GO ?= go
export GOFLAGS ?= -mod=mod

.PHONY: test check deps apiserver vet fmt-check tidy-check bench floor fuzz golden-update build image demo mesh-sim

## VERSION: the agent's version, linked into the binary (peeragent version) and the image's
## tag: the VERSION file, the one place it is set (deploy/base/daemonset.yaml names the same
## tag; go test ./deploy fails when they differ); override: make image VERSION=v0.1.1-rc.1
VERSION ?= $(shell cat $(CURDIR)/VERSION)
VERSION_LDFLAGS = -X github.com/peeragent/peeragent/internal/buildinfo.version=$(VERSION)
IMAGE ?= ghcr.io/peeragent/peeragent
## IMAGE_ARCHES: the index's architectures, comma-separated; the first is the one Docker's
## manifest.json names (docker load with the classic image store)
IMAGE_ARCHES ?= amd64,arm64

## test: what CI runs: formatting, vet, and every test with the race detector, e2e/ (the
## cluster, end-to-end and no-flap tests) included (also the image builder's, a module of its
## own in tools/image, whose test builds and runs the image)
test: deps apiserver fmt-check vet
	$(GO) test -race -count=1 -timeout 25m ./...
	$(GO) -C tools/image test -race -count=1 ./...

## check: the fast loop, for every change before make test: gofmt, vet, go mod tidy, and the
## tests of the pure tier with -short (the reducer, Diff, goldens, State, the loop as a library,
## the field, import and doc-citation guards): no daemon, no cluster, no namespace. make test
## still runs everything.
CHECK_PKGS ?= ./state/... ./reducer/... ./selector/... ./effects ./effects/vpp ./golden/... \
	./agent/... ./internal/importrules/... ./internal/docrefs/... ./internal/buildinfo/... ./tools/perfdoc/...
check: fmt-check vet tidy-check
	$(GO) test -short -count=1 $(CHECK_PKGS)

## deps: install the real peers the interop tests run (Debian packages), when missing and
## the machine allows it (root and apt-get); never fails: tests then skip, or fail under CI=true
## DEPS: command:package pairs; a command is found in PATH or /usr/sbin
DEPS ?= bird:bird2 /usr/lib/frr/bgpd:frr
deps:
	@missing=; for d in $(DEPS); do cmd=$${d%%:*}; pkg=$${d#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || [ -x /usr/sbin/$$cmd ] || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	why="interop tests will skip, or fail under CI=true"; \
	if [ "$$(id -u)" != 0 ]; then echo "deps: not root, not installing$$missing ($$why)"; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "deps: no apt-get, not installing$$missing ($$why)"; exit 0; fi; \
	echo "deps: installing$$missing"; log=$$(mktemp); \
	if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; } >$$log 2>&1; \
	then :; else tail -n 20 $$log; echo "deps: apt-get install$$missing failed ($$why)"; fi; rm -f $$log

## apiserver: build kube-apiserver and etcd for internal/testrig/kube (tools/apiserver/build.sh) into
## a cache outside the repo, when missing (cold: minutes, ~3 GB); never fails: real-cluster
## tests then skip, or fail under CI=true. Nothing to do when KUBEBUILDER_ASSETS is set.
apiserver:
	@if [ -n "$$KUBEBUILDER_ASSETS" ]; then exit 0; fi; \
	GO="$(GO)" bash tools/apiserver/build.sh >/dev/null || \
	echo "apiserver: build failed (output above); real-cluster tests will skip, or fail under CI=true"

## build: the agent binary, ./peeragent, built as the image's (static: CGO_ENABLED=0,
## -trimpath, no symbol table or DWARF: -s -w; tools/image, tools/meshsim)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o peeragent ./cmd/peeragent

## image: the agent's image for $(IMAGE_ARCHES), one OCI index tagged $(IMAGE):$(VERSION), as
## peeragent-$(VERSION).oci.tar (an OCI image layout with Docker's manifest.json), and its SBOM,
## peeragent-$(VERSION).spdx.json (SPDX 2.3: the Go modules linked in); static binaries
## (CGO_ENABLED=0, -trimpath) on an empty base, built without a container daemon
## (tools/image); load it with ctr image import, podman load or docker load -i
image:
	$(GO) -C tools/image run . -repo $(CURDIR) -version $(VERSION) -image $(IMAGE) \
	  -arch $(IMAGE_ARCHES) -o $(CURDIR)/peeragent-$(VERSION).oci.tar \
	  -sbom $(CURDIR)/peeragent-$(VERSION).spdx.json

## demo: two agents from examples/lab on 127.0.0.1 and 127.0.0.2 until Established
demo:
	./examples/lab/demo.sh

vet:
	$(GO) vet ./...
	$(GO) -C tools/image vet ./...

tidy-check:
	$(GO) mod tidy -diff

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

## golden-update: rewrite the want-* sections of the golden scenarios
golden-update:
	$(GO) test ./golden -run TestGolden -update

## bench: the scale benchmarks (convergence and churn against the GoBGP floor, the old
## way, memory, a /metrics scrape at 100,000 learned routes; e2e/bench*_test.go) and the core's (reducer, up to 10,000 peers), then
## docs/performance.md from them (tools/perfdoc); not part of make test. About 6 minutes on
## 2 cores. Leaves bench.txt, bench-stat.txt and the 10,000-peer run's bench-tenk.prof.
BENCHSTAT ?= GOFLAGS= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BENCH_AGENT = $(GO) test -run '^$$' -benchtime 1x -timeout 30m
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -ec
bench:
	start=$$(date +%s); cat /proc/loadavg > bench-loadavg.txt; \
	$(GO) test -run '^$$' -bench '/peers=(100|1000|10000)$$' -benchmem -benchtime 200ms -count 3 ./reducer | tee bench.txt; \
	$(GO) test -run '^$$' -bench '^Benchmark(OwnAffinityChange|ServiceEndpointChange)$$' -benchmem -benchtime 200ms -count 6 ./reducer | tee -a bench.txt; \
	$(GO) test -run '^$$' -bench '^BenchmarkOwnPaths$$' -benchtime 1x -count 6 ./effects/gobgp | tee -a bench.txt; \
	$(GO) test -run '^$$' -bench '^BenchmarkBestPathChange$$' -benchmem -benchtime 2000x -count 3 ./reducer | tee -a bench.txt; \
	$(GO) test -run '^$$' -bench '^BenchmarkLearnedInstall$$/^routes=(1000|10000|100000)$$' -benchtime 1x -count 3 -timeout 30m ./effects/linux | tee -a bench.txt; \
	$(BENCH_AGENT) -bench '^BenchmarkConvergence$$/^mesh=' -count 10 ./e2e | tee -a bench.txt; \
	$(BENCH_AGENT) -bench '^Benchmark(Convergence|Churn)$$/^(peers=|gobgp$$)' -count 1 \
	  -cpuprofile bench-tenk.prof ./e2e | tee -a bench.txt; \
	$(BENCH_AGENT) -bench '^Benchmark(Churn|Memory)$$/^(instant|state|churn=)' -count 3 ./e2e | tee -a bench.txt; \
	$(GO) test -run '^$$' -bench '^BenchmarkScrape$$' -benchtime 20x -count 3 -timeout 30m ./e2e | tee -a bench.txt; \
	$(GO) test -run '^$$' -bench '^BenchmarkLearnedHeap$$' -benchtime 1x -count 3 -timeout 30m ./e2e | tee -a bench.txt; \
	$(BENCHSTAT) bench.txt > bench-stat.txt; \
	$(GO) run ./tools/perfdoc -bench bench.txt -benchstat bench-stat.txt -profile bench-tenk.prof \
	  -loadavg bench-loadavg.txt -elapsed $$(( $$(date +%s) - start ))s -out docs/performance.md; \
	rm -f bench-loadavg.txt

## floor: the GoBGP floor (bare loop, no agent): AddPeer, in-place and resetting
## UpdatePeer, DeletePeer and heap per neighbor at 1,000 and 10,000 neighbors on GoBGP v3.37.0,
## v4.3.0, v4.7.0 and v4.8.0 side by side (tools/gobgpfloor, its own modules). Not part of
## test; ~10 min on 2 cores. Leaves floor.txt, floor-stat.txt, floor-table.md, floor-loadavg.txt.
floor:
	tools/gobgpfloor/run.sh

## mesh-sim: N simulated nodes (network namespaces on one bridge, the node-to-node mesh, one
## pod block each), once with peeragent and once with BIRD 2 configured as calico-node does
## (tools/meshsim): RSS, CPU to converge, idle CPU, re-convergence after SIGKILL and restart of
## 20%, connects and refusals meanwhile, observers' route changes; prints the table and writes
## the "Mesh simulation beside BIRD" section of docs/performance.md. N is one size or a list
## (N=10,30: a table each, and RSS fitted per neighbor). Root, iproute2 and bird2; not part of
## make test. About 2.5 min per size up to N=30; MESHSIM_FLAGS adds flags (-idle, -keep, ...);
## MESHSIM_FLAGS=-speakers=peeragent,gobgp,bird adds the GoBGP floor (tools/meshsim/floor: the
## agent's GoBGP alone, configured as the agent configures the mesh) between them.
N ?= 10
MESHSIM_FLAGS ?=
mesh-sim:
	$(GO) run ./tools/meshsim -n $(N) -doc docs/performance.md $(MESHSIM_FLAGS)

## fuzz: each fuzz target for FUZZTIME (default 60s)
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./selector
	$(GO) test -run '^$$' -fuzz '^FuzzDiff$$' -fuzztime $(FUZZTIME) ./state/pmap
	$(GO) test -run '^$$' -fuzz '^FuzzReduce$$' -fuzztime $(FUZZTIME) ./reducer
	$(GO) test -run '^$$' -fuzz '^FuzzLoadDocument$$' -fuzztime $(FUZZTIME) ./watch
	$(GO) test -run '^$$' -fuzz '^FuzzManifestDir$$' -fuzztime $(FUZZTIME) -parallel 1 ./watch
