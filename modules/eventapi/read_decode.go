package eventapi

import (
	"encoding/json"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

type readBody struct {
	Subject string          `json:"subject"`
	Options json.RawMessage `json:"options"`
}

type wireBound struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

type wireFromLatest struct {
	Subject          string `json:"subject"`
	Type             string `json:"type"`
	IfEventIsMissing string `json:"ifEventIsMissing"`
}

type readOptions struct {
	Recursive       bool            `json:"recursive"`
	Order           *string         `json:"order"`
	LowerBound      *wireBound      `json:"lowerBound"`
	UpperBound      *wireBound      `json:"upperBound"`
	FromLatestEvent *wireFromLatest `json:"fromLatestEvent"`
}

// DecodeRead turns a read-events body into read options.
func DecodeRead(body []byte) (store.ReadOptions, error) {
	var req readBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return store.ReadOptions{}, err
	}
	if !event.ValidSubject(req.Subject) {
		return store.ReadOptions{}, badRequest("invalid subject: %s", event.Quote(req.Subject))
	}
	if err := httpkit.CheckOptions(req.Options, "recursive", "order", "lowerBound", "upperBound", "fromLatestEvent"); err != nil {
		return store.ReadOptions{}, err
	}
	var o readOptions
	if err := decodeOptions(req.Options, &o); err != nil {
		return store.ReadOptions{}, err
	}
	opts := store.ReadOptions{Subject: req.Subject, Recursive: o.Recursive}
	if o.Order != nil {
		switch *o.Order {
		case "chronological":
		case "antichronological":
			opts.Descending = true
		default:
			return store.ReadOptions{}, badRequest("invalid request: unknown order %s, expected 'chronological' or 'antichronological'", event.Quote(*o.Order))
		}
	}
	var err error
	if opts.Lower, err = decodeBound(o.LowerBound); err != nil {
		return store.ReadOptions{}, err
	}
	if opts.Upper, err = decodeBound(o.UpperBound); err != nil {
		return store.ReadOptions{}, err
	}
	if opts.FromLatest, err = decodeFromLatest(o.FromLatestEvent, "read-nothing"); err != nil {
		return store.ReadOptions{}, err
	}
	if opts.FromLatest != nil && opts.Lower != nil {
		return store.ReadOptions{}, badRequest("invalid request: lowerBound and fromLatestEvent cannot be combined")
	}
	return opts, nil
}

// decodeOptions decodes the options object (absent or null is empty).
func decodeOptions(raw json.RawMessage, into any) error {
	return httpkit.DecodeJSON(raw, into)
}

func decodeBound(b *wireBound) (*store.Bound, error) {
	if b == nil {
		return nil, nil
	}
	id, ok := event.ParseID(b.ID)
	if !ok {
		return nil, badRequest("invalid event id: %s", event.Quote(b.ID))
	}
	switch b.Type {
	case "inclusive":
		return &store.Bound{ID: id, Inclusive: true}, nil
	case "exclusive":
		return &store.Bound{ID: id}, nil
	}
	return nil, badRequest("invalid request: unknown bound type %s, expected 'inclusive' or 'exclusive'", event.Quote(b.Type))
}

// decodeFromLatest validates fromLatestEvent; waitValue is the
// ifEventIsMissing value other than read-everything that the endpoint takes
// (read-nothing for reads, wait-for-event for observers). ReadEverything in
// the result is false for waitValue.
func decodeFromLatest(f *wireFromLatest, waitValue string) (*store.FromLatest, error) {
	if f == nil {
		return nil, nil
	}
	switch {
	case !event.ValidSubject(f.Subject):
		return nil, badRequest("invalid subject: %s", event.Quote(f.Subject))
	case !event.ValidType(f.Type):
		return nil, badRequest("invalid event type: %s", event.Quote(f.Type))
	}
	out := &store.FromLatest{Subject: f.Subject, Type: f.Type}
	switch f.IfEventIsMissing {
	case waitValue:
	case "read-everything", "observe-everything":
		out.ReadEverything = true
	default:
		return nil, badRequest("invalid request: unknown ifEventIsMissing %s, expected '%s' or 'read-everything'", event.Quote(f.IfEventIsMissing), waitValue)
	}
	return out, nil
}

type subjectsBody struct {
	BaseSubject string `json:"baseSubject"`
}

// DecodeSubjects returns the base subject of a read-subjects body.
func DecodeSubjects(body []byte) (string, error) {
	var req subjectsBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return "", err
	}
	if !event.ValidSubject(req.BaseSubject) {
		return "", badRequest("invalid subject: %s", event.Quote(req.BaseSubject))
	}
	return req.BaseSubject, nil
}
