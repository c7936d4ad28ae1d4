// Package tracing holds the service's OpenTelemetry traces
// (docs/operations.md, "Tracing"): the tracer provider configured by the
// standard OTEL_* environment variables, the OTLP exporter over gRPC or
// HTTP, the spans of HTTP requests, and the accounting of spans
// dropped because the collector could not take them. Off, it creates no
// span and wraps nothing.
package tracing
