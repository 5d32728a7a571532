# syntax=docker/dockerfile:1
#
# scirun and athosc as static binaries in a distroless image (docs/usage.md, "Running a server in
# production"). Build: docker build -t scirun . ; the Kubernetes manifests are in deploy/kubernetes.
#
# Not built as an image on the development machine (no Docker daemon there): cmd/scirun
# TestDeployManifests checks this file and the manifests statically; the build step itself was
# run by hand (CGO_ENABLED=0: both binaries statically linked).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
RUN go build -ldflags="-s -w" -o /out/scirun ./cmd/scirun && \
    go build -ldflags="-s -w" -o /out/athosc ./cmd/athosc

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scirun /out/athosc /usr/local/bin/
USER nonroot:nonroot
# 7070: sessions (--listen); 9090: --metrics, /healthz, /readyz.
EXPOSE 7070 9090
ENTRYPOINT ["/usr/local/bin/scirun"]
