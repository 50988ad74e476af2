# Wharf build entry points. `make run` and `make test` are the two commands a
# newcomer needs; everything else is for developers.

GO        ?= go
BIN       := $(CURDIR)/bin
DATA_DIR  ?= $(CURDIR)/.wharf
GOTESTFLAGS ?=
PKGS      := ./...

export WHARF_BIN_DIR := $(BIN)

.PHONY: all build run test unit e2e bench lint fmt clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	$(BIN)/wharf-hub --data-dir=$(DATA_DIR)

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# test runs lint, builds the binaries the end-to-end tests start, then runs
# every test. No test is skipped for a missing tool: tests fail instead.
test: lint build
	$(GO) test -count=1 -timeout=25m $(GOTESTFLAGS) $(PKGS)

bench: build
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
