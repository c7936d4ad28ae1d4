// Package docs holds the references the service serves itself: the
// EventQL reference is a resource of its MCP server (api.md §4.17).
package docs

import _ "embed"

// EventQL is eventql.md, the reference of the query language.
//
//go:embed eventql.md
var EventQL string
