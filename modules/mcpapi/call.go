package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// forwarded are the headers of the MCP request that its tools' requests
// carry: the token, and the trace the client is in.
var forwarded = []string{"Authorization", "Traceparent", "Tracestate"}

// call makes the request of t's route for the arguments of req, and turns
// the answer into the tool's result.
func (s *Server) call(ctx context.Context, t tool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := json.RawMessage(`{}`)
	if a := bytes.TrimSpace(req.Params.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		args = a
	}
	c, err := s.request(ctx, t, args, req.Extra, t.name)
	if err != nil {
		return nil, err
	}
	return s.result(t, args, c), nil
}

// request makes the request of t's route with args as its body, through
// the service's handler, with the token and address of the MCP request of
// extra, for the tool or resource named what (the audit line names it),
// and returns its answer.
func (s *Server) request(ctx context.Context, t tool, args json.RawMessage, extra *mcp.RequestExtra, what string) (*capture, error) {
	ctx, cancel := context.WithCancel(httpkit.WithTool(ctx, what))
	defer cancel()
	var body io.Reader = http.NoBody
	if t.method != http.MethodGet {
		body = bytes.NewReader(args)
	}
	r, err := http.NewRequestWithContext(ctx, t.method, t.path, body)
	if err != nil {
		return nil, fmt.Errorf("request of %s: %w", what, err)
	}
	if t.method != http.MethodGet {
		r.Header.Set("Content-Type", "application/json")
	}
	if extra != nil {
		for _, h := range forwarded {
			if v := extra.Header.Get(h); v != "" {
				r.Header.Set(h, v)
			}
		}
		if info := extra.TokenInfo; info != nil {
			r.RemoteAddr, _ = info.Extra[remoteKey].(string)
		}
	}
	c := newCapture(t.line, s.maxResults, cancel)
	s.routes.ServeHTTP(c, r)
	return c, nil
}

// result is the tool's result for the answer c of its route.
func (s *Server) result(t tool, args json.RawMessage, c *capture) *mcp.CallToolResult {
	if message, failed := c.refusal(); failed {
		structured := map[string]any{"error": message}
		if c.status != http.StatusOK {
			structured["status"] = c.status
		} else {
			structured[t.items] = c.items // those before the error line
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: message}}, StructuredContent: structured}
	}
	if !c.streamed() {
		return whole(t, c.body.Bytes())
	}
	structured := map[string]any{t.items: c.items, "truncated": c.cut}
	summary := fmt.Sprintf("%s: %d.", t.items, len(c.items))
	if c.cut {
		summary = fmt.Sprintf("%s: %d; the answer is cut at %d or 1 MiB.", t.items, len(c.items), s.maxResults)
		if next := continuation(t, args, c.items); next != nil {
			structured["continueWith"] = next
			summary += fmt.Sprintf(" For the next ones, call %s with these arguments: %s", t.name, next)
		} else if t.hint != "" {
			structured["hint"] = t.hint
			summary += " To see more, " + t.hint + "."
		}
	}
	var text strings.Builder
	text.WriteString(summary)
	for _, item := range c.items {
		text.WriteByte('\n')
		text.Write(item)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, StructuredContent: structured}
}

// continuation returns the arguments that continue t after items, or nil.
func continuation(t tool, args json.RawMessage, items []json.RawMessage) json.RawMessage {
	if t.next == nil || len(items) == 0 {
		return nil
	}
	return t.next(args, items[len(items)-1])
}

// whole is the result of a JSON answer: the answer as structured content
// (an array under t.items, as structured content is an object), and as
// text.
func whole(t tool, answer []byte) *mcp.CallToolResult {
	answer = bytes.TrimSpace(answer)
	var structured any = json.RawMessage(answer)
	if len(answer) > 0 && answer[0] == '[' {
		structured = map[string]json.RawMessage{t.items: answer}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(answer)}}, StructuredContent: structured}
}

// nextEvents continues a read of events after last: from the next id on
// (newest first: up to the one before), without fromLatestEvent, which
// the first read has passed.
func nextEvents(args, last json.RawMessage) json.RawMessage {
	var read map[string]json.RawMessage
	var lastEvent struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(args, &read) != nil || json.Unmarshal(last, &lastEvent) != nil {
		return nil
	}
	id, err := strconv.ParseUint(lastEvent.ID, 10, 64)
	if err != nil {
		return nil
	}
	options := map[string]json.RawMessage{}
	if raw, ok := read["options"]; ok && json.Unmarshal(raw, &options) != nil {
		return nil
	}
	delete(options, "fromLatestEvent")
	var order string
	_ = json.Unmarshal(options["order"], &order)
	if order == "antichronological" {
		if id == 0 {
			return nil
		}
		options["upperBound"] = boundAt(id - 1)
	} else {
		options["lowerBound"] = boundAt(id + 1)
	}
	read["options"], _ = json.Marshal(options)
	next, _ := json.Marshal(read)
	return next
}

// boundAt is an inclusive bound at id.
func boundAt(id uint64) json.RawMessage {
	return json.RawMessage(`{"id":"` + strconv.FormatUint(id, 10) + `","type":"inclusive"}`)
}
