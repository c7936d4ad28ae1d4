# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION=1.0.0 --build-arg REVISION=$(git rev-parse HEAD) -t eventstore .
# Run:   docker run -p 3000:3000 -e EVENTSTORE_API_TOKEN=... -v eventstore-data:/var/lib/eventstore eventstore

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY modules ./modules
COPY ui ./ui
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/eventstore ./cmd/eventstore \
 && mkdir -p /out/data

# Static binary on a distroless base: no shell, no package manager, non-root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/eventstore /usr/local/bin/eventstore
COPY --from=build --chown=65532:65532 /out/data /var/lib/eventstore
USER 65532:65532
VOLUME /var/lib/eventstore
EXPOSE 3000
# Exec form, so SIGTERM reaches eventstore as PID 1. The token comes from
# EVENTSTORE_API_TOKEN or EVENTSTORE_API_TOKEN_FILE.
ENTRYPOINT ["eventstore"]
CMD ["run", "--data-directory=/var/lib/eventstore", "--http-enabled", "--https-enabled=false"]
