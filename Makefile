# mcpolicy — `make help` lists the targets.
GO      ?= go
BIN     := bin/mcpolicy
EXAMPLE := examples/code-index

.PHONY: all build install test lint bench golden example help

all: lint test ## lint, then every test

build: ## build bin/mcpolicy
	$(GO) build -o $(BIN) ./cmd/mcpolicy

install: ## install mcpolicy into $(go env GOPATH)/bin
	$(GO) install ./cmd/mcpolicy

test: ## every test, the real-engine ones included (CI=true: a missing docker/podman fails)
	$(GO) test -count=1 -timeout 15m ./...
	$(GO) run ./cmd/mcpolicy build --check $(EXAMPLE)

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: ## benchmarks: load + compile + emit of 1 and 500 servers
	$(GO) test -run '^$$' -bench . -benchmem ./...

golden: ## rewrite golden/testdata from the current code; review `git diff golden/` before committing
	MCPOLICY_UPDATE=1 $(GO) test -count=1 ./golden/
	@git --no-pager diff --stat -- golden/

example: build ## rebuild the bundled example's artefacts
	$(BIN) build $(EXAMPLE)

help: ## this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-z]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
