# The {{project_name}} image: the binary cargo built on this machine, on a minimal base
# with glibc and CA certificates, as a non-root user (deploy/manager/manager.yaml runs
# it as 65532). Build the binary first, then the image:
#
#   cargo build --release --bin {{project_name}}
#   docker build -t {{repo}}:dev .
#
# The binary is built outside the image because the runtime crates may be path
# dependencies (`kcr init --runtime-path`), which a build inside the image cannot see.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY target/release/{{project_name}} /usr/local/bin/{{project_name}}
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/{{project_name}}"]
