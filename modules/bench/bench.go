package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Target is the service under load.
type Target struct {
	// URL is the base URL, e.g. http://127.0.0.1:3000.
	URL string
	// Token is the API token.
	Token string
	// Nodes, when there are several, are the base URLs of the nodes of one
	// PostgreSQL database (URL is the first): each request goes to the
	// next node in turn.
	Nodes []string
	turn  *atomic.Uint64
}

// NewTarget returns the target of the nodes at urls, with token.
func NewTarget(token string, urls ...string) Target {
	return Target{URL: urls[0], Token: token, Nodes: urls, turn: new(atomic.Uint64)}
}

// base returns the base URL of the next request.
func (t Target) base() string {
	if len(t.Nodes) < 2 {
		return t.URL
	}
	return t.Nodes[t.turn.Add(1)%uint64(len(t.Nodes))]
}

// Node returns the target of node i alone (counting from 0, modulo the
// number of nodes).
func (t Target) Node(i int) Target {
	if len(t.Nodes) == 0 {
		return t
	}
	return NewTarget(t.Token, t.Nodes[i%len(t.Nodes)])
}

func newClient(connections int) *http.Client {
	return &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			MaxIdleConns:        connections,
			MaxIdleConnsPerHost: connections,
			MaxConnsPerHost:     connections,
			DisableCompression:  true,
		},
	}
}

// EventType is the type of the events the write scenarios write.
const EventType = "io.eventstore.bench.recorded"

// EventSchema matches the events the write scenarios write.
const EventSchema = `{"type":"object","properties":{"amount":{"type":"integer","minimum":0},"currency":{"type":"string","enum":["EUR","USD"]},` +
	`"customer":{"type":"string","pattern":"^c-[0-9]+$"},"note":{"type":"string","maxLength":200},` +
	`"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},` +
	`"required":["amount","currency","customer","items"],"additionalProperties":false}`

// writeBody returns a write-events body of n events of eventType on subject.
func writeBody(subject, eventType string, n int) []byte {
	return batchBody(n, func(int) (string, string) { return subject, eventType })
}

// batchBody returns a write-events body of n events; event i has the
// subject and type of place(i).
func batchBody(n int, place func(i int) (subject, eventType string)) []byte {
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		subject, eventType := place(i)
		fmt.Fprintf(&b, `{"source":"https://bench.eventstore.example","subject":%q,"type":%q,"data":{"amount":%d,"currency":"EUR","customer":"c-%06d","note":"an ordinary event of a few hundred bytes","items":[{"sku":"a-1","qty":1},{"sku":"b-2","qty":3}]}}`, subject, eventType, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func (t Target) post(ctx context.Context, client *http.Client, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

// RegisterSchema binds schema to eventType.
func (t Target) RegisterSchema(ctx context.Context, eventType, schema string) error {
	body := []byte(`{"eventType":"` + eventType + `","schema":` + schema + `}`)
	if err := t.call(ctx, newClient(1), "/api/v1/register-event-schema", body, nil); err != nil {
		return fmt.Errorf("register schema: %w", err)
	}
	return nil
}
