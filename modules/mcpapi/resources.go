package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/eventstore-service/eventstore/docs"
)

// The resources: what a model reads before it writes a query.
const (
	// EventQLURI is the EventQL reference.
	EventQLURI = "eventstore://docs/eventql"
	// EventTypesURI is the event types with their schemas, as
	// esdb_read_event_types returns them for the reader's token.
	EventTypesURI = "eventstore://event-types"
)

// addResources adds the resources to server; eventTypes is the tool whose
// route lists the event types.
func (s *Server) addResources(server *mcp.Server, eventTypes tool) {
	server.AddResource(&mcp.Resource{
		URI: EventQLURI, Name: "eventql-reference", Title: "EventQL reference", MIMEType: "text/markdown",
		Description: "The reference of EventQL, the query language of esdb_run_eventql_query: grammar, types, functions, aggregates, errors, with examples. Read it before writing a query.",
		Size:        int64(len(docs.EventQL)),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: EventQLURI, MIMEType: "text/markdown", Text: docs.EventQL}}}, nil
	})
	server.AddResource(&mcp.Resource{
		URI: EventTypesURI, Name: "event-types", Title: "Event types", MIMEType: "application/json",
		Description: "The store's event types with their JSON Schemas, as esdb_read_event_types returns them: what the data of each type holds, for writing queries.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c, err := s.request(ctx, eventTypes, json.RawMessage(`{}`), req.Extra, EventTypesURI)
		if err != nil {
			return nil, err
		}
		if message, failed := c.refusal(); failed {
			return nil, errors.New(message)
		}
		text, err := json.Marshal(map[string]any{eventTypes.items: c.items, "truncated": c.cut})
		if err != nil {
			return nil, fmt.Errorf("event types: %w", err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: EventTypesURI, MIMEType: "application/json", Text: string(text)}}}, nil
	})
}
