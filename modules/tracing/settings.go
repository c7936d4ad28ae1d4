package tracing

import (
	"fmt"
	"strings"
)

// Protocols of the OTLP exporter.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Settings say whether traces are exported, and how.
type Settings struct {
	// Enabled: --otel-enabled, an OTLP endpoint set, and neither
	// OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
	Enabled bool
	// Protocol is ProtocolGRPC or ProtocolHTTP (the default, as in the
	// OpenTelemetry specification).
	Protocol string
}

// ReadSettings reads the standard variables through getenv; flagEnabled is
// --otel-enabled, which turns tracing off whatever they say. A protocol
// other than grpc and http/protobuf is an error.
func ReadSettings(flagEnabled bool, getenv func(string) string) (Settings, error) {
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = ProtocolHTTP
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	s := Settings{
		Enabled: flagEnabled && endpoint &&
			!strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") &&
			exporter != "none",
		Protocol: protocol,
	}
	if !s.Enabled {
		return s, nil
	}
	if protocol != ProtocolGRPC && protocol != ProtocolHTTP {
		return s, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: use %s or %s", protocol, ProtocolGRPC, ProtocolHTTP)
	}
	if exporter != "" && exporter != "otlp" {
		return s, fmt.Errorf("OTEL_TRACES_EXPORTER %q: only otlp (or none) is supported", exporter)
	}
	return s, nil
}
