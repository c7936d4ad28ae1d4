package consumer

import (
	"context"
	"encoding/json"
)

// nameBody is the body of the routes that name a subscription.
type nameBody struct {
	Subscription string `json:"subscription"`
}

// Create defines the subscription name on the events of subject. Creating
// it again with the same definition changes nothing; with another one it
// is a 409 *Error.
func (c *Client) Create(ctx context.Context, name, subject string, opts Options) (Subscription, error) {
	var s Subscription
	_, err := c.call(ctx, "create-subscription", struct {
		Subscription string  `json:"subscription"`
		Subject      string  `json:"subject"`
		Options      Options `json:"options"`
	}{name, subject, opts}, &s)
	return s, err
}

// Get returns the definition and state of the subscription name.
func (c *Client) Get(ctx context.Context, name string) (Subscription, error) {
	var s Subscription
	_, err := c.call(ctx, "read-subscription", nameBody{name}, &s)
	return s, err
}

// List returns every subscription, by name.
func (c *Client) List(ctx context.Context) ([]Subscription, error) {
	out := []Subscription{}
	err := c.stream(ctx, "read-subscriptions", struct{}{}, "subscription", func(payload json.RawMessage) error {
		var s Subscription
		if err := json.Unmarshal(payload, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Delete removes the subscription name with its state; its consume
// streams end with ErrSubscriptionDeleted.
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.call(ctx, "delete-subscription", nameBody{name}, nil)
	return err
}

// Reset moves every partition of the subscription name to start (a
// projection's rebuild): the deliveries in flight become stale, parked
// events stay parked.
func (c *Client) Reset(ctx context.Context, name string, start Start) (Subscription, error) {
	var s Subscription
	_, err := c.call(ctx, "reset-subscription", struct {
		Subscription string `json:"subscription"`
		Start        Start  `json:"start"`
	}{name, start}, &s)
	return s, err
}

// Parked returns the parked events of the subscription name, in id order.
func (c *Client) Parked(ctx context.Context, name string) ([]ParkedEvent, error) {
	out := []ParkedEvent{}
	err := c.stream(ctx, "read-parked-events", nameBody{name}, "parkedEvent", func(payload json.RawMessage) error {
		var p ParkedEvent
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// Replay delivers the parked events with the given ids once more (attempt
// 1), ahead of new events, and returns how many are replayed: an id that
// is not parked is left alone. Without ids it replays nothing and sends
// no request; ReplayAll replays every parked event.
func (c *Client) Replay(ctx context.Context, name string, eventIDs ...string) (int, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	return c.replay(ctx, name, eventIDs)
}

// ReplayAll delivers every parked event of the subscription name once more
// (attempt 1), ahead of new events, and returns how many are replayed.
func (c *Client) ReplayAll(ctx context.Context, name string) (int, error) {
	return c.replay(ctx, name, nil)
}

// replay asks replay-parked-events for eventIDs (nil: all).
func (c *Client) replay(ctx context.Context, name string, eventIDs []string) (int, error) {
	body := struct {
		Subscription string   `json:"subscription"`
		EventIDs     []string `json:"eventIds,omitempty"`
	}{name, eventIDs}
	var out struct {
		Replayed int `json:"replayed"`
	}
	_, err := c.call(ctx, "replay-parked-events", body, &out)
	return out.Replayed, err
}
