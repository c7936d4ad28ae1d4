// Package metrics holds the service's private Prometheus registry: the Go
// and process collectors, eventstore_build_info and the HTTP request
// metrics. Other modules register their own metrics on the same registry.
// Labels never carry subjects, types, ids, paths or tokens: HTTP metrics are
// labelled by route template. An Exposition serves the registry in the
// Prometheus text formats, less the series a Hide names (those of the
// subscriptions a token may not read).
package metrics
