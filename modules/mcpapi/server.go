package mcpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// Path is the MCP endpoint.
const Path = "/mcp"

// SessionTimeout closes a session that made no request for this long; its
// client starts a new one.
const SessionTimeout = 30 * time.Minute

// remoteKey names the caller's address in the TokenInfo of a session's
// requests: the tools' requests carry it for the audit lines.
const remoteKey = "remote"

// Options configure the Server.
type Options struct {
	// Version is the service's version, the server's in the handshake.
	Version string
	// AllowWrites adds the tools that write events and register schemas.
	AllowWrites bool
	// MaxResults bounds the events or rows of one answer.
	MaxResults int
	// Stopping is done when the stop phase begins: the server's streams
	// (GET) end then.
	Stopping context.Context
	// Log receives the SDK's errors.
	Log *zap.Logger
}

// Server is the MCP server: its tools call the routes of a handler that
// is set once the service's handler exists (SetRoutes), as /mcp is one of
// its routes.
type Server struct {
	maxResults int
	handler    http.Handler // /mcp
	stopping   context.Context
	// routes is the handler the tools' requests go through, set before
	// the server starts.
	routes http.Handler
}

// New returns the MCP server of opts.
func New(opts Options) *Server {
	s := &Server{maxResults: opts.MaxResults, stopping: opts.Stopping}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	// The SDK's warnings and errors only: its INFO lines (a session per
	// client connected, disconnected) would be noise, in its field names.
	core, err := zapcore.NewIncreaseLevelCore(opts.Log.Core(), zapcore.WarnLevel)
	if err != nil {
		core = opts.Log.Core()
	}
	logger := slog.New(zapslog.NewHandler(core))
	server := mcp.NewServer(&mcp.Implementation{Name: "eventstore", Title: "eventstore", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       logger,
	})
	all := tools(opts.AllowWrites)
	for _, t := range all {
		server.AddTool(&mcp.Tool{
			Name:        t.name,
			Title:       t.title,
			Description: t.description,
			InputSchema: json.RawMessage(t.input),
			Annotations: annotations(t),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.call(ctx, t, req)
		})
	}
	s.addResources(server, all[slices.IndexFunc(all, func(t tool) bool { return t.name == "esdb_read_event_types" })])
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		SessionTimeout: SessionTimeout,
		Logger:         logger,
	})
	// The token was checked before (the route is guarded); this names the
	// session's token, so that no other token can use the session, and
	// keeps the caller's address for the tools' requests.
	named := mcpauth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*mcpauth.TokenInfo, error) {
		name := "api-token"
		if tok := auth.TokenOf(ctx); tok != nil {
			name = tok.Name
		}
		return &mcpauth.TokenInfo{UserID: name, Extra: map[string]any{remoteKey: r.RemoteAddr}}, nil
	}, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	s.handler = named(streamable)
	return s
}

// instructions tell a model what the server is for.
const instructions = "eventstore is an event store: an append-only log of CloudEvents, each with a subject (an entity's path such as /books/42) and a type. " +
	"To explore it, list the event types (esdb_read_event_types) and subjects (esdb_read_subjects), read a subject's events (esdb_read_events), and answer questions across entities with EventQL (esdb_run_eventql_query). " +
	"Before writing a query, read the resources " + EventQLURI + " (the EventQL reference) and " + EventTypesURI + " (the event types and their schemas). " +
	"Answers are bounded: a cut answer says how to continue."

// SetRoutes sets the handler whose routes the tools call, the service's,
// before the service starts.
func (s *Server) SetRoutes(h http.Handler) { s.routes = h }

// Route returns the route of /mcp: POST for the client's messages, GET for
// the server's stream, DELETE to end a session; any valid token may
// connect, and each tool call is checked as its route.
func (s *Server) Route() httpkit.Route {
	return httpkit.Route{
		Method: http.MethodPost, MoreMethods: []string{http.MethodGet, http.MethodDelete}, Path: Path,
		Guarded: true, Permission: httpkit.PermitAnyToken, Handler: http.HandlerFunc(s.serve),
	}
}

// serve hands r to the SDK. Each write of the answer renews its deadline,
// as the server's streams do, and a GET stream ends when the service
// stops.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && s.stopping != nil {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(s.stopping, cancel)()
		r = r.WithContext(ctx)
	}
	s.handler.ServeHTTP(&renewing{ResponseWriter: w, rc: http.NewResponseController(w)}, r)
}

// renewing renews the write deadline before each write.
type renewing struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *renewing) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(httpkit.LineWriteTimeout))
	return w.ResponseWriter.Write(p)
}

func (w *renewing) Flush() { _ = w.rc.Flush() }

// Unwrap lets a ResponseController reach the connection.
func (w *renewing) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// annotations tell a client which tools only read.
func annotations(t tool) *mcp.ToolAnnotations {
	no := false
	if t.write {
		return &mcp.ToolAnnotations{Title: t.title, DestructiveHint: &no, OpenWorldHint: &no}
	}
	return &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: true, OpenWorldHint: &no}
}
