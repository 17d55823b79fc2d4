# The {{project_name}} image: built with cargo, run as a static-enough binary on a
# minimal base as a non-root user (deploy/manager/manager.yaml runs it as 65532).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --bin {{project_name}} \
 && install -D target/release/{{project_name}} /out/{{project_name}}

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/{{project_name}} /usr/local/bin/{{project_name}}
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/{{project_name}}"]
