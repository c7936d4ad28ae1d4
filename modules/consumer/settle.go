package consumer

import (
	"context"
	"encoding/json"
	"time"
)

// MaxTokens is the most delivery tokens one settle request may carry;
// Acknowledge, Retry and Park split longer lists into several requests.
const MaxTokens = 10_000

// SettleResult is the outcome of a settle.
type SettleResult struct {
	// Settled counts the deliveries acknowledged, retried or parked.
	Settled int
	// Stale lists the tokens that settled nothing: their partition moved
	// (the delivery is handled elsewhere) or their event was settled
	// already.
	Stale []string
}

// settleBody is the body of the settle routes.
type settleBody struct {
	Subscription string   `json:"subscription"`
	Deliveries   []string `json:"deliveries"`
	After        string   `json:"after,omitempty"`
	By           string   `json:"by,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// Acknowledge settles the deliveries of tokens as done.
func (c *Client) Acknowledge(ctx context.Context, subscription string, tokens ...string) (SettleResult, error) {
	return c.settle(ctx, "acknowledge-deliveries", "acknowledged", settleBody{Subscription: subscription}, tokens)
}

// Retry has the deliveries of tokens sent again after the delay after (0
// to 1 hour), as the next attempt: after their subscription's
// maxDeliveries attempts they are parked.
func (c *Client) Retry(ctx context.Context, subscription string, after time.Duration, tokens ...string) (SettleResult, error) {
	body := settleBody{Subscription: subscription}
	if after != 0 {
		body.After = after.String()
	}
	return c.settle(ctx, "retry-deliveries", "retried", body, tokens)
}

// InProgress tells the service that the deliveries of tokens are still
// being worked on: each one's acknowledge deadline becomes now + by (1 s
// to 1 hour; 0: the subscription's acknowledge timeout), its attempt
// unchanged, so that it is not sent again meanwhile. Their Settled counts
// the deliveries extended.
func (c *Client) InProgress(ctx context.Context, subscription string, by time.Duration, tokens ...string) (SettleResult, error) {
	body := settleBody{Subscription: subscription}
	if by != 0 {
		body.By = by.String()
	}
	return c.settle(ctx, "extend-deliveries", "extended", body, tokens)
}

// Park settles the deliveries of tokens by parking their events with
// reason (at most 1,024 bytes; "" for none): they are listed by Parked and
// may be replayed.
func (c *Client) Park(ctx context.Context, subscription, reason string, tokens ...string) (SettleResult, error) {
	return c.settle(ctx, "park-deliveries", "parked", settleBody{Subscription: subscription, Reason: reason}, tokens)
}

// settle sends tokens to route in requests of at most MaxTokens; the
// answers count the settled deliveries under key. On an error it returns
// what the requests before it settled.
func (c *Client) settle(ctx context.Context, route, key string, body settleBody, tokens []string) (SettleResult, error) {
	out := SettleResult{Stale: []string{}}
	for len(tokens) > 0 {
		n := min(len(tokens), MaxTokens)
		body.Deliveries = tokens[:n]
		var answer map[string]json.RawMessage
		if _, err := c.call(ctx, route, body, &answer); err != nil {
			return out, err
		}
		var settled int
		var stale []string
		_ = json.Unmarshal(answer[key], &settled)
		_ = json.Unmarshal(answer["stale"], &stale)
		out.Settled += settled
		out.Stale = append(out.Stale, stale...)
		tokens = tokens[n:]
	}
	return out, nil
}

// Acknowledgement names deliveries to acknowledge together with a write.
type Acknowledgement struct {
	// Subscription is the deliveries' subscription.
	Subscription string `json:"subscription"`
	// Deliveries are the tokens (1 to MaxTokens).
	Deliveries []string `json:"deliveries"`
}

// WriteOptions are the optional parts of a write.
type WriteOptions struct {
	// Preconditions must all hold for the write to happen (409 otherwise).
	Preconditions []Precondition
	// Acknowledge, when set, acknowledges these deliveries in the same
	// atomic commit as the events: both or neither. A delivery that is no
	// longer held makes the write fail with ErrNotHeld, nothing written.
	Acknowledge *Acknowledgement
}

// WriteEvents writes events (1 to 10,000) atomically and returns them as
// stored.
func (c *Client) WriteEvents(ctx context.Context, events []EventCandidate, opts WriteOptions) ([]Event, error) {
	candidates := make([]EventCandidate, len(events))
	for i, e := range events {
		if e.Data == nil {
			e.Data = struct{}{}
		}
		candidates[i] = e
	}
	body := struct {
		Events        []EventCandidate `json:"events"`
		Preconditions []Precondition   `json:"preconditions,omitempty"`
		Acknowledge   *Acknowledgement `json:"acknowledge,omitempty"`
	}{candidates, opts.Preconditions, opts.Acknowledge}
	var written []Event
	_, err := c.call(ctx, "write-events", body, &written)
	return written, err
}
