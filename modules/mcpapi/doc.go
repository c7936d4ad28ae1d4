// Package mcpapi serves the Model Context Protocol at /mcp (docs/api.md
// §4.17): tools that an AI agent calls to explore the store, each of them
// one route of the HTTP API. A tool call is a request of its route, made
// through the service's own handler with the caller's token, so it is
// authenticated, checked against the token's grants, admitted, audited and
// counted exactly as that route; the tool turns the route's answer into a
// bounded result that says how to continue.
package mcpapi
