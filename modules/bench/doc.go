// Package bench is a load generator for the HTTP API: it drives write and
// read scenarios with concurrent clients and reports throughput and latency
// percentiles. It speaks only HTTP, so it measures what clients see.
package bench
