// Package bench is a load generator for the HTTP API: it drives write, read,
// observe and query scenarios with concurrent clients and reports
// throughput and latency percentiles, and the server's CPU and memory when
// it started the server itself. It speaks only HTTP, so it measures what
// clients see; its baseline scenario loads a trivial handler of the same
// binary with the same client, the ceiling the machine allows. Results are
// written as JSON and compared between runs.
package bench
