# mcpolicy — `make help` lists the targets.
GO      ?= go
# Every build static, tests and vet too: the binaries tests bind into
# sandboxes are built static (no C library there), and one cgo setting
# for all compiles each package once (a cgo net is another build of
# everything above it, and runs gcc).
export CGO_ENABLED = 0
# Trimmed as a release is built (tools/release): its compiles are then the
# tests' own, and CI's release check only links. Added to the flags go
# env gives (the environment's, or `go env -w`'s), not in their place.
export GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -trimpath)
BIN     := bin/mcpolicy
EXAMPLE := examples/code-index
BENCHSTAT ?= $(GO) run golang.org/x/perf/cmd/benchstat@latest
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build install test test-short lint bench golden example verify docs help release

all: lint test ## lint, then every test

# Static (no cgo): mcpolicy binds itself into sandboxes as the egress
# forwarder and the probe, where no C library may be present.
build: ## build bin/mcpolicy and bin/mcpolicy-launch (static)
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/mcpolicy
	CGO_ENABLED=0 $(GO) build -o bin/mcpolicy-launch ./cmd/mcpolicy-launch

install: ## install mcpolicy and mcpolicy-launch (client entries run it) into $(go env GOPATH)/bin (static)
	CGO_ENABLED=0 $(GO) install ./cmd/...

# The mains that are not products sit where ./... does not reach, so that
# `go install ./...` (what pre-commit's golang hooks run) installs mcpolicy
# and mcpolicy-launch alone: in _ folders (as Go's own
# cmd/compile/internal/ssa/_gen), or testdata/ for what only tests build.
# Named here, they are vetted, staticchecked and tested all the same (a
# test in cmd/mcpolicy/cli holds this list to the tree).
HIDDEN := ./bench/_cuecompare ./bench/_ratio ./compiler/exposure/_gen ./examples/canary/_server ./internal/exitcode/_gen ./runtime/supervise/testdata/hostile ./verify/e2e/testdata/rugpull ./verify/escape/testdata/helper

# The slowest packages first (they mostly wait on engines): go test starts
# packages in the order given (two at a time), so the long ones do not
# start last. vet is `make lint`'s, and test binaries linked without symbol
# tables link in half the time (stack traces keep their lines). Benchmarks
# run once, in a pass of their own over the packages that have any: with
# -bench, go test runs every package one after another.
SLOW := ./verify/e2e ./verify ./verify/escape ./evidence/prove ./schema
BENCH_PKGS = $(shell grep -rl --include='*_test.go' '^func Benchmark' . | grep -v /testdata/ | xargs -n1 dirname | sort -u)
test: ## every test, the real-engine ones included (CI=true: a missing docker/podman fails); every benchmark run once, so none breaks unseen
	$(GO) test -count=1 -vet=off -ldflags='-s -w' -timeout 15m $(SLOW) ./... $(HIDDEN)
	$(GO) test -count=1 -vet=off -ldflags='-s -w' -run '^$$' -bench . -benchtime 1x -timeout 10m $(BENCH_PKGS)
	cd tools/release && $(GO) test -count=1 -timeout 20m ./...
	$(GO) run ./cmd/mcpolicy build --check $(EXAMPLE)

# vet runs in `make lint`; test binaries linked without symbol tables link
# faster, and linking sixty of them is most of the loop on two cores.
test-short: ## the edit loop (< 1 min): every package, without the tests that run engines, sandboxes, pre-commit or the network
	$(GO) test -short -count=1 -vet=off -ldflags='-s -w' ./... $(HIDDEN)
	cd tools/release && $(GO) test -short -count=1 ./...

# macOS is where the seatbelt backend runs: mcpolicy must build there
# (docs/macos.md). Every package but verify/ (the escape suite drives Linux
# sandboxes) is vetted for darwin too; cmd/mcpolicy-launch and launch's
# ns_*_test.go are Linux-only by build constraint, so darwin's list has none.
# One arch: no file of the module depends on the arch, so amd64 would
# compile the same code a second time (a minute of CI); arm64 is what Macs
# run now. DARWIN_ARCHS="arm64 amd64" checks both.
DARWIN_ARCHS ?= arm64

lint: ## gofmt, go vet and staticcheck (pinned, through go run); mcpolicy cross-built and vetted for macOS
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... $(HIDDEN)
	$(STATICCHECK) ./... $(HIDDEN)
	cd tools/release && $(GO) vet ./... && $(STATICCHECK) ./...
	@for arch in $(DARWIN_ARCHS); do \
	  echo "GOOS=darwin GOARCH=$$arch: go build ./cmd/mcpolicy, go vet (all but verify/)"; \
	  GOOS=darwin GOARCH=$$arch $(GO) build -o /dev/null ./cmd/mcpolicy || exit 1; \
	  pkgs=$$(GOOS=darwin GOARCH=$$arch $(GO) list ./... | grep -v '^github.com/mcpolicy/mcpolicy/verify') || exit 1; \
	  GOOS=darwin GOARCH=$$arch $(GO) vet $$pkgs || exit 1; \
	done

bench: ## benchmarks: build and lint against `cue export` (whole processes); load + compile + emit; the write report on 100,000 files; spawn cost per launch; every way to start a server to its MCP initialize reply, the egress path against a direct socket and a tools/call through the tool relay against a straight pipe, side by side as ratios
	@echo "compile path against cue export (cue at go.mod's version), whole processes:"
	$(GO) run ./bench/_cuecompare
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v '/bench$$')
	@echo "the write report's walk, a 100,000-file project:"
	$(GO) test ./bench -run '^$$' -bench Report -benchtime 5x
	@out=$$(mktemp); trap 'rm -f "$$out" "$$out.rc"' EXIT; \
	  echo "spawn cost, 10 runs per launch (a few minutes):"; \
	  { $(GO) test ./bench -run '^$$' -bench Spawn -count 10; echo $$? >"$$out.rc"; } | tee "$$out"; \
	  [ "$$(cat "$$out.rc")" = 0 ] || exit 1; echo; \
	  $(BENCHSTAT) -col /launch "$$out" || echo "benchstat did not run (is the Go module proxy reachable?): the raw benchmark output above is the result"
	@out=$$(mktemp); trap 'rm -f "$$out" "$$out.rc"' EXIT; \
	  echo "a real MCP server (the go-sdk's memory example) to its initialize reply, every launch, 10 runs each (a few minutes):"; \
	  { $(GO) test ./bench -run '^$$' -bench Initialize -count 10; echo $$? >"$$out.rc"; } | tee "$$out"; \
	  [ "$$(cat "$$out.rc")" = 0 ] || exit 1; \
	  echo "the egress path against a direct socket, 10 runs each:"; \
	  { $(GO) test ./runtime/egress -run '^$$' -bench Egress -count 10; echo $$? >"$$out.rc"; } | tee -a "$$out"; \
	  [ "$$(cat "$$out.rc")" = 0 ] || exit 1; \
	  echo "a tools/call through the tool relay against a straight pipe, 10 runs each:"; \
	  { $(GO) test ./runtime/toolrelay -run '^$$' -bench RelayCall -count 10; echo $$? >"$$out.rc"; } | tee -a "$$out"; \
	  [ "$$(cat "$$out.rc")" = 0 ] || exit 1; \
	  $(GO) run ./bench/_ratio -col path -base direct <"$$out"

golden: ## rewrite golden/testdata from the current code; review `git diff golden/` before committing
	MCPOLICY_UPDATE=1 $(GO) test -count=1 ./golden/
	@git --no-pager diff --stat -- golden/

example: build ## rebuild the bundled example's artefacts
	$(BIN) build $(EXAMPLE)

docs: ## regenerate docs/rules.md, docs/diff-kinds.md, the table of docs/exit-codes.md and docs/commands.md's grammar from their registries (a test fails when one is stale)
	$(GO) run ./cmd/mcpolicy rules --format markdown > docs/rules.md
	$(GO) run ./cmd/mcpolicy rules --diff --format markdown > docs/diff-kinds.md
	$(GO) run ./internal/exitcode/_gen docs/exit-codes.md
	$(GO) run ./compiler/exposure/_gen docs/exposure.md
	MCPOLICY_UPDATE=1 $(GO) test -count=1 -run '^TestGrammarDoc$$' ./cmd/mcpolicy/cli

help: ## this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

verify: ## the differential test with 1,000 generated policies per backend
	MCPOLICY_VERIFY_CASES=1000 $(GO) test -count=1 -timeout 60m -run 'TestDifferential' -v ./verify/ | grep -E '^(=== RUN|---|\s+differential_test.go:[0-9]+: [a-z]+: [0-9]+ cases)|^(ok|FAIL)'

# tools/release is a module of its own (its SBOM library stays out of
# mcpolicy's dependencies, and ./... never reaches it); it builds from a
# clone of the commit, so uncommitted changes are never released.
release: ## build a release of HEAD into dist/ (VERSION=v0.1.0, else git describe --tags): static archives for linux and darwin on amd64 and arm64, a CycloneDX SBOM, notes, SHA256SUMS (docs/release.md)
	rm -rf dist
	cd tools/release && $(GO) run . -root "$(CURDIR)" -out "$(CURDIR)/dist" $(if $(VERSION),-version "$(VERSION)")
	cd dist && if command -v sha256sum >/dev/null; then sha256sum -c SHA256SUMS; else shasum -a 256 -c SHA256SUMS; fi
