# emq: valkey-server 8.0 from Debian's bookworm-backports, with the emq
# module loaded — the server the project tests against, installed by the
# project's own script, never another build of it.
#   docker build -t emq . && docker run --rm -p 6379:6379 emq

# Build emq.so with the same glibc (Debian bookworm) as the runtime image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The unit tests need no server; the integration tests run in `make test`.
RUN go test ./ids/... ./keys/... ./errors/... ./emq/...
RUN go build -buildmode=c-shared -trimpath -o /out/emq.so ./cmd/emq-module \
 && chmod 0755 /out/emq.so

FROM debian:bookworm-slim
COPY scripts/install-valkey.sh /tmp/install-valkey.sh
RUN /tmp/install-valkey.sh \
 && rm -rf /tmp/install-valkey.sh /var/lib/apt/lists/*
COPY --from=build /out/emq.so /usr/local/lib/valkey/emq.so
# The package's own user and data directory.
USER valkey
WORKDIR /var/lib/valkey
EXPOSE 6379
# protected-mode off: the container's port is the boundary; put a password
# (--requirepass) or ACL users in front of anything but a local trial.
CMD ["valkey-server", "--loadmodule", "/usr/local/lib/valkey/emq.so", \
     "--crash-memcheck-enabled", "no", "--protected-mode", "no", \
     "--dir", "/var/lib/valkey"]
