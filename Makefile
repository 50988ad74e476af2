# Wharf build entry points. `make run` and `make test` are the two commands a
# newcomer needs; everything else is for developers.

GO        ?= go
BIN       := $(CURDIR)/bin
DATA_DIR  ?= $(CURDIR)/.wharf
GOTESTFLAGS ?=
PKGS      := ./...

export WHARF_BIN_DIR := $(BIN)

# KUBE_TOOLS_DIR holds kube-apiserver, etcd and kubectl v1.37.2 for the
# end-to-end fixture (test/kube): <repo>/.cache/kube-tools/<hash of
# test/tools/go.mod, go.sum, build flags, Go version>, or under
# $WHARF_KUBE_TOOLS_CACHE. Lazily evaluated; `make -s kube-tools-dir` prints it.
KUBE_TOOLS_DIR = $(shell GO=$(GO) bash test/tools/build.sh --print-dir)

.PHONY: all build run test unit e2e bench bench-providers bench-noisy lint fmt clean generate
.PHONY: kube-tools kube-tools-dir kube-tools-for-test
.PHONY: chart-tools chart-tools-dir
.PHONY: soak

all: build

# The hub reports the Kubernetes API version it serves, tagged with ours.
GIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X k8s.io/component-base/version.gitVersion=v1.37.2-wharf+$(GIT_COMMIT) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitCommit=$(GIT_COMMIT)

# Provider plugins are built as $(BIN)/wharf-provider-<name>, the names
# --provider-dir loads.
build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/wharf-provider-hello ./sdk/examples/hello

# run loads every provider plugin that build made (the sample: hello).
run: build
	$(BIN)/wharf-hub --data-dir=$(DATA_DIR) --provider-dir=$(BIN) $(ARGS)

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# test runs lint, builds the binaries the end-to-end tests start, then runs
# every test (test/gotest.sh: on a failure it ends with what failed). No
# test is skipped for a missing tool: tests fail instead.
# The tunnel library is also run under the race detector: its tests exist
# to catch concurrency bugs.
# -parallel=4: the end-to-end tests mostly wait on the hubs they start, so
# go's default (GOMAXPROCS, 2 here) left the cores idle; on 2 cores 4 took
# test/e2e/hub from 898 s to 536 s and make test from ~21 to ~17 minutes.
test: lint build kube-tools-for-test chart-tools
	GO=$(GO) bash test/gotest.sh -count=1 -parallel=4 -timeout=25m $(GOTESTFLAGS) $(PKGS)
	$(GO) test -race -count=1 -timeout=10m ./revdial/...

# kube-tools builds kube-apiserver, etcd and kubectl from the separate tools
# module test/tools into $(KUBE_TOOLS_DIR), reusing it while the hash matches.
# Cold: ~4-10 min on 2 cores, ~3 GB RAM, ~3.5 GB Go build cache; warm: seconds.
kube-tools:
	@GO=$(GO) bash test/tools/build.sh >/dev/null
	@echo "KUBE_TOOLS_DIR=$(KUBE_TOOLS_DIR)"
	@for b in kube-apiserver etcd kubectl; do echo "  $(KUBE_TOOLS_DIR)/$$b"; done

kube-tools-dir:
	@echo $(KUBE_TOOLS_DIR)

# Built before `go test` so the cold build shows progress and stays outside
# the test timeout; skipped when prebuilt binaries are given (the fixture
# honours KUBE_APISERVER_BIN and ETCD_BIN, and KUBECTL, else kubectl on PATH when both are set).
kube-tools-for-test:
	@if [ -n "$$KUBE_APISERVER_BIN" ] && [ -n "$$ETCD_BIN" ]; then \
	  echo "kube-tools: using KUBE_APISERVER_BIN=$$KUBE_APISERVER_BIN ETCD_BIN=$$ETCD_BIN"; \
	else $(MAKE) --no-print-directory kube-tools; fi

# chart-tools builds helm and kubeconform for the chart checks (test/charts)
# from their own tools module, test/charttools, into
# <repo>/.cache/chart-tools/<hash> (or $WHARF_CHART_TOOLS_CACHE): a hash
# of its own, so it never invalidates the kube-tools. Cold: 1-3 min.
chart-tools:
	@GO=$(GO) bash test/charttools/build.sh >/dev/null
	@echo "CHART_TOOLS_DIR=$$(GO=$(GO) bash test/charttools/build.sh --print-dir)"

chart-tools-dir:
	@GO=$(GO) bash test/charttools/build.sh --print-dir

bench: build
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)
	cd test/bench/revdial && GOTOOLCHAIN=go1.27.3 $(GO) test -run='^$$' -bench=Compare -benchtime=1x -timeout=30m .
	$(GO) run ./test/bench/hub -bin $(BIN)/wharf-hub
	$(GO) test -run='^$$' -bench='^BenchmarkAuthorize$$' ./hub/authz/rbac | $(GO) run ./test/bench/authzratio
	$(GO) run ./test/bench/rbac -bin $(BIN)/wharf-hub
	$(GO) test -tags rpbench -run='^$$' -bench=. -benchtime=1x -timeout=20m ./test/bench/resourceproxy
	WHARF_BENCH_EDGES=1 $(GO) test -count=1 -run='^$$' -bench='^BenchmarkEdges$$' -benchtime=1x -timeout=15m ./test/bench/edges
	WHARF_BENCH_TENANTFILTER=1 $(GO) test -count=1 -run='^$$' -bench='^BenchmarkTenantFilter$$' -benchtime=1x -timeout=30m ./test/bench/tenantfilter
	$(MAKE) --no-print-directory bench-providers
	$(MAKE) --no-print-directory bench-noisy

# soak runs test/ha's fault cases and, on a bed of its own beside them, a
# 5-minute mixed-load soak (make test runs the same with a 30 s soak). haproxy comes from
# Debian, installed once if missing (as root).
soak: build kube-tools-for-test
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; }
	WHARF_SOAK=5m $(GO) test -count=1 -timeout=30m -v -run 'TestHA$$|TestSoak$$|TestEmbeddedCrash' ./test/ha/

# bench-providers compares the hub's backend proxy with nginx and with no
# proxy; nginx comes from Debian, installed once if missing (as root).
bench-providers: build
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; }
	$(GO) run ./test/bench/providers -bin $(BIN)/wharf-hub

# bench-noisy is issue 24's noisy-neighbour benchmark: a victim tenant's
# p50/p99/errors at baseline and under each attack B1-B7, missed lease
# renewals, the store against its quota, and no-misbehaviour throughput.
# NOISY_ARGS adds flags, e.g. NOISY_ARGS='-before-bin old/wharf-hub' for
# before and after from one run, or NOISY_ARGS=-quick for a smoke run.
bench-noisy: build
	$(GO) run ./test/bench/noisy -bin $(BIN)/wharf-hub -edges-bin $(BIN)/wharf-provider-edges $(NOISY_ARGS)

# generate rewrites the deepcopy and OpenAPI code of the hub's API types.
# The OpenAPI definitions also cover the k8s.io/api groups the hub serves,
# because server-side apply needs a schema for every served kind.
KUBE_OPENAPI_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kube-openapi)
OPENAPI_PKGS := k8s.io/api/core/v1 k8s.io/api/events/v1 k8s.io/api/rbac/v1 k8s.io/api/coordination/v1 \
	k8s.io/api/authentication/v1 k8s.io/api/authorization/v1 k8s.io/api/autoscaling/v1 k8s.io/api/policy/v1 \
	k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version \
	k8s.io/apimachinery/pkg/api/resource k8s.io/apimachinery/pkg/util/intstr \
	k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 ./hub/apis/tenancy/v1alpha1 \
	./hub/apis/providers/v1alpha1
generate:
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --output-file zz_generated.deepcopy.go \
	  --go-header-file hub/openapi/header.txt ./hub/apis/tenancy/v1alpha1 ./hub/apis/providers/v1alpha1
	# tenant filter: Capsule's and capsule-proxy's kinds.
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --output-file zz_generated.deepcopy.go \
	  --go-header-file hub/openapi/header.txt ./providers/tenantfilter/apis/capsule/v1beta2 ./providers/tenantfilter/apis/capsule/v1beta1
	$(GO) run k8s.io/kube-openapi/cmd/openapi-gen@$(KUBE_OPENAPI_VERSION) --output-dir hub/openapi \
	  --output-pkg github.com/wharfhub/wharf/hub/openapi --output-file zz_generated.openapi.go \
	  --output-model-name-file zz_generated.model_name.go \
	  --go-header-file hub/openapi/header.txt --report-filename /dev/null $(OPENAPI_PKGS)
	# sdk/plugin/pluginpb: needs protoc, protoc-gen-go@v1.36.12 and protoc-gen-go-grpc on PATH.
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" $(GO) generate ./sdk/plugin/pluginpb

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
