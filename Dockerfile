# The controller binaries (sample-controller, vm-controller, myweb-operator) in one small,
# non-root image; each Deployment in deploy/ picks its binary with `command`.
#   docker build -t kube-controllers-rs:dev .
# Stage 1 builds with the pinned toolchain; stage 2 is distroless (glibc, CA certificates,
# no shell, uid 65532).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin \
 && install -D target/release/sample-controller /out/sample-controller \
 && install -D target/release/vm-controller /out/vm-controller \
 && install -D target/release/myweb-operator /out/myweb-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/sample-controller"]
