package httpkit

import (
	"context"
	"net/http"
)

// Route is one endpoint a module contributes to the HTTP server.
type Route struct {
	// Method is the method the route answers (GET routes answer HEAD too),
	// with MoreMethods; other methods get 405 with an Allow header.
	Method string
	// MoreMethods are further methods the route answers (/mcp answers POST,
	// GET and DELETE); most routes have none.
	MoreMethods []string
	// Path is the exact path, also the route's label in metrics and logs.
	Path string
	// Handler serves the route.
	Handler http.Handler
	// Public routes under /api/ answer without the token (ping); every
	// other route there requires it.
	Public bool
	// Guarded routes outside /api/ require the token too (/mcp); the
	// others there (the console's files) do not.
	Guarded bool
	// Probe marks ping and health: they answer while a restore runs and on
	// the connections of the reserve beyond --max-connections.
	Probe bool
	// DuringRestore lets the handler answer while a restore runs (the
	// restore itself, and the probes); the server answers 503 for every
	// other route then.
	DuringRestore bool
	// UnlimitedBody exempts the body from the request size limit, the
	// total time limit of bodies and the response's write deadline (a
	// restore's backup, streamed); the idle limit between its bytes holds.
	UnlimitedBody bool
	// DuringShutdown lets the handler answer while the service shuts down;
	// the server answers 503 for every other route then.
	DuringShutdown bool
	// Permission is the grant a token needs for the route (docs/api.md
	// §1.2a), checked right after the token; the zero value is admin's.
	Permission Permission
	// Download, when set, lets the console save the route's answer to a
	// file through a download ticket (docs/api.md §4.12a): the name
	// the file gets unless the ticket names another.
	Download string
}

// Permission is what a route requires of a token before it reads the
// request: the grant that can allow it. A route of subjects or of a
// subscription checks the grant's prefixes or names once it knows them.
type Permission int

// The permissions of routes.
const (
	// PermitAdmin: the admin grant only (the zero value: a route that
	// names none).
	PermitAdmin Permission = iota
	// PermitAnyToken: every valid token (verify-api-token, health,
	// read-access).
	PermitAnyToken
	// PermitRead: a read grant (read-events, observe-events, read-subjects,
	// read-event-types, read-event-type).
	PermitRead
	// PermitQuery: the query grant (run-eventql-query).
	PermitQuery
	// PermitWrite: a write grant (write-events).
	PermitWrite
	// PermitSchemas: the schemas grant together with query
	// (register-event-schema, whose answer tells about the events of the
	// type it checks).
	PermitSchemas
	// PermitIndexes: the schemas grant (register-data-index,
	// remove-data-index, which tell nothing about events).
	PermitIndexes
	// PermitReadOrQuery: a read grant or query (read-data-indexes).
	PermitReadOrQuery
	// PermitConsume: a consume grant (consume-subscription, the settles).
	PermitConsume
	// PermitConsumeOrOperate: a consume grant or operate
	// (read-subscription).
	PermitConsumeOrOperate
	// PermitOperate: the operate grant (backup, restore, read-only mode,
	// verify, diagnostics, managing subscriptions, parked events).
	PermitOperate
)

// Unmatched is the route label of requests that match no route.
const Unmatched = "none"

type routeKey struct{}

// WithRoute returns a context that records the route template of a request.
func WithRoute(ctx context.Context, template string) context.Context {
	return context.WithValue(ctx, routeKey{}, template)
}

type toolKey struct{}

// WithTool returns a context that records the MCP tool a request was made
// for: the audit line of the request names it.
func WithTool(ctx context.Context, tool string) context.Context {
	return context.WithValue(ctx, toolKey{}, tool)
}

// ToolOf returns the MCP tool recorded in ctx, or "".
func ToolOf(ctx context.Context) string {
	t, _ := ctx.Value(toolKey{}).(string)
	return t
}

// RouteOf returns the route template recorded for r, or Unmatched.
func RouteOf(r *http.Request) string {
	if t, ok := r.Context().Value(routeKey{}).(string); ok {
		return t
	}
	return Unmatched
}
