# kubeup: everything CI runs is `make test`.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
VERSION := $(or $(shell git describe --always --dirty 2>/dev/null),dev)
LDFLAGS := -X kubeup.dev/kubeup/internal/version.Version=$(VERSION)
BINARIES := kubeup nodeup protokube

TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.7.0
STATICCHECK := $(TOOLS)/staticcheck

# make bench BENCH=Execute BENCHTIME=100x
BENCH ?= .
BENCHTIME ?= 1s
BENCH_OUT := bench.out

GOLDEN_PKG := kubeup.dev/kubeup/internal/golden

.PHONY: build test lint bench update-golden demo clean

## build: bin/kubeup, bin/nodeup and bin/protokube, stamped with `git describe`
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(BINARIES))

## test: lint, then every test with the race detector, including the ones behind the e2e build tag (they need root)
test: lint
	$(GO) test -count=1 -race -tags e2e ./...

## lint: gofmt, go vet and staticcheck, with and without the e2e build tag
lint: $(STATICCHECK)
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change these files:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./...

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: the engine's benchmarks (select with BENCH=regexp, BENCHTIME=1s|100x), also saved to bench.out
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime=$(BENCHTIME) ./engine/ | tee $(BENCH_OUT)

## update-golden: rewrite the golden files of every package whose tests use internal/golden
update-golden:
	@pkgs=$$($(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... \
		| awk '{ for (i = 2; i <= NF; i++) if ($$i == "$(GOLDEN_PKG)") { print $$1; break } }'); \
	if [ -z "$$pkgs" ]; then echo "no tests use $(GOLDEN_PKG)"; exit 0; fi; \
	echo "$(GO) test -count=1" $$pkgs "-update"; \
	$(GO) test -count=1 $$pkgs -update; \
	git status --short -- $$(for p in $$pkgs; do echo "./$${p#kubeup.dev/kubeup/}"; done) || true

## demo: converge a scratch directory with the engine: dry run, apply, dry run again
demo:
	$(GO) run ./internal/demo

## clean: remove what the build and the benchmarks wrote (not .tools/)
clean:
	rm -rf bin/ $(BENCH_OUT)
