# peeragent
GO ?= go
export GOFLAGS ?= -mod=mod

.PHONY: test vet fmt-check bench fuzz golden-update

## test: what CI runs: formatting, vet, and every test with the race detector
test: fmt-check vet
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

## golden-update: rewrite the want-* sections of the golden scenarios
golden-update:
	$(GO) test ./golden -run TestGolden -update

## bench: the core benchmarks (not part of make test)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./reducer | tee bench.txt

## fuzz: each fuzz target for FUZZTIME (default 60s)
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./selector
	$(GO) test -run '^$$' -fuzz FuzzDiff -fuzztime $(FUZZTIME) ./internal/pmap
