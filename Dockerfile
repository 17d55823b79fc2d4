# The controller binaries (sample-controller, vm-controller, myweb-operator) in one small,
# non-root image; each Deployment in deploy/ picks its binary with `command`.
#   docker build -t kube-controllers-rs:dev .
# No registry (or no Docker engine)? hack/image.sh builds the same image with podman from
# Debian's packages and saves it as an OCI archive (README, "In a cluster").
#
# Stage 1 builds with the pinned toolchain and makes the runtime root filesystem with
# hack/image/rootfs.sh (glibc, libgcc's unwinder, the CA certificates, the nonroot user
# 65532: what distroless/cc has, unpacked from Debian bookworm's packages); stage 2 is that
# root filesystem and the binaries on an empty base: no shell, no package manager.
# hack/verify-image.sh checks that this last stage and hack/image/Containerfile (what
# hack/image.sh builds) are the same instructions.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin \
 && install -D target/release/sample-controller /out/sample-controller \
 && install -D target/release/vm-controller /out/vm-controller \
 && install -D target/release/myweb-operator /out/myweb-operator
RUN bash hack/image/rootfs.sh /rootfs

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/sample-controller"]
