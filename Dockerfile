# One image with every Wharf binary: wharf-hub, wharf, wharf-agent and the
# wharf-provider-* plugins, all under /usr/local/bin, which is where the
# charts (charts/wharf-hub, charts/wharf-agent) run them from.
#
#   docker build -t ghcr.io/wharfhub/wharf:<version> --build-arg VERSION=<version> .
#
# test/charts checks that every main package under cmd/ is built in here.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: their layer is reused while go.mod and go.sum stand still.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v1.37.2-wharf
# Static binaries (the runtime image has no libc); ./cmd/... is every
# binary, so a new one is in the image without editing this file. The
# version flags match the Makefile's: clients negotiate on it.
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
      -o /out/ ./cmd/...

# distroless: no shell, no package manager; uid 65532 (the charts'
# runAsUser).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/wharf-hub"]
