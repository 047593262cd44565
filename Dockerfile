# The wanlab image that `wanlab experiment k8s` runs (docs/experiments.md):
#
#   docker build -t registry.example/wanlab:v1 . && docker push registry.example/wanlab:v1
#
# Not built by the project's CI, which has no container engine: a Go test
# (experiment/k8s) checks that this file and the manifests agree (the Go
# version, the binary's name and place, the shell the shard's command
# needs), not that the image builds or runs.
#
# Build from a clone: the build stamps the commit into every results file
# (run.wanlab_version). A git worktree's .git points outside the build
# context; there, add --build-arg GOFLAGS=-buildvcs=false.

FROM golang:1.26 AS build
ARG GOFLAGS
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static: wanlab uses no C library, so the runtime image needs none of
# the builder's.
RUN CGO_ENABLED=0 go build -trimpath -o /out/wanlab ./cmd/wanlab

# Debian for /bin/sh: the shard's command computes its shard from
# JOB_COMPLETION_INDEX in the shell, and custom tests run their client:
# and server: commands with /bin/sh -c. wanlab needs no other program:
# it makes namespaces, links, addresses and routes through netlink and
# sets sysctls through /proc/sys itself (iproute2 is not needed; add it,
# or the programs custom tests run, in an image of your own FROM this one).
FROM debian:trixie-slim
COPY --from=build /out/wanlab /usr/local/bin/wanlab
ENTRYPOINT ["/usr/local/bin/wanlab"]
CMD ["--help"]
