# Baton's container image: the `baton` binary, statically linked (glibc, crt-static), on an
# empty base with CA certificates, running as 65532:65532 (the chart's securityContext). hack/build-image.sh builds this with Docker, or the same image without a
# daemon (umoci) — keep the two in step.
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The target is named so that the static flag reaches only the binary, not build scripts.
RUN RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --profile image --locked -p baton --target x86_64-unknown-linux-gnu \
 && install -D -m 0755 target/x86_64-unknown-linux-gnu/image/baton /out/baton \
 && printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' > /out/passwd \
 && printf 'nonroot:x:65532:\n' > /out/group

FROM scratch
ARG VERSION=0.1.0
ARG SOURCE=https://example.invalid/baton
ARG LICENSE=Apache-2.0
LABEL org.opencontainers.image.title="baton" \
      org.opencontainers.image.description="Kueue-style multi-cluster preemption orchestrator (manager and worker shim)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSE}"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build /out/baton /baton
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# mimalloc gives freed pages back at once instead of 10 ms later: during a burst pages are
# freed and reused many times within 10 ms, and the delay let them pile up. Measured with
# manager_scale, 10 workers x 10,000 pending workloads: peak 119-123 -> 108 MiB; 3% more
# CPU per workload (issue 23). The e2e harness runs the binaries with the same setting.
ENV MIMALLOC_PURGE_DELAY=0
USER 65532:65532
ENTRYPOINT ["/baton"]
