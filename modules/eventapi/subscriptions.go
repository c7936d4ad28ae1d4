package eventapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/names"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// Paths of the subscription endpoints (docs/api.md §4.14).
const (
	CreateSubscriptionPath  = "/api/v1/create-subscription"
	ReadSubscriptionsPath   = "/api/v1/read-subscriptions"
	ReadSubscriptionPath    = "/api/v1/read-subscription"
	DeleteSubscriptionPath  = "/api/v1/delete-subscription"
	ResetSubscriptionPath   = "/api/v1/reset-subscription"
	ConsumeSubscriptionPath = "/api/v1/consume-subscription"
	AcknowledgePath         = "/api/v1/acknowledge-deliveries"
	RetryPath               = "/api/v1/retry-deliveries"
	ParkPath                = "/api/v1/park-deliveries"
	ExtendPath              = "/api/v1/extend-deliveries"
	ReadParkedEventsPath    = "/api/v1/read-parked-events"
	ReplayParkedEventsPath  = "/api/v1/replay-parked-events"
)

// Bounds of the settle requests.
const (
	maxTokens       = 10_000
	maxRetryDelay   = time.Hour
	minExtension    = time.Second
	maxExtension    = time.Hour
	maxReasonLength = 1024
)

// subscriptionRoutes returns the routes of the subscription endpoints.
func (a *API) subscriptionRoutes() []httpkit.Route {
	if a.subs == nil {
		return nil
	}
	route := func(path string, perm httpkit.Permission, h http.Handler) httpkit.Route {
		return httpkit.Route{Method: http.MethodPost, Path: path, Handler: h, Permission: perm}
	}
	return []httpkit.Route{
		route(CreateSubscriptionPath, httpkit.PermitOperate, http.HandlerFunc(a.createSubscription)),
		route(ReadSubscriptionsPath, httpkit.PermitOperate, a.streams.admit(a.readSubscriptions)),
		route(ReadSubscriptionPath, httpkit.PermitConsumeOrOperate, http.HandlerFunc(a.readSubscription)),
		route(DeleteSubscriptionPath, httpkit.PermitOperate, http.HandlerFunc(a.deleteSubscription)),
		route(ResetSubscriptionPath, httpkit.PermitOperate, http.HandlerFunc(a.resetSubscription)),
		route(ConsumeSubscriptionPath, httpkit.PermitConsume, a.streams.admit(a.consumeSubscription)),
		route(AcknowledgePath, httpkit.PermitConsume, a.settleHandler(subscriptions.Acknowledge, "acknowledged")),
		route(RetryPath, httpkit.PermitConsume, a.settleHandler(subscriptions.Retry, "retried")),
		route(ParkPath, httpkit.PermitConsume, a.settleHandler(subscriptions.Park, "parked")),
		route(ExtendPath, httpkit.PermitConsume, a.settleHandler(subscriptions.Extend, "extended")),
		route(ReadParkedEventsPath, httpkit.PermitOperate, a.streams.admit(a.readParkedEvents)),
		route(ReplayParkedEventsPath, httpkit.PermitOperate, http.HandlerFunc(a.replayParkedEvents)),
	}
}

// subscriptionError translates an error of the subscription manager.
func (a *API) subscriptionError(name string, err error) error {
	switch {
	case errors.Is(err, subscriptions.ErrNotFound):
		return httpkit.Errorf(http.StatusNotFound, "subscription %s not found", event.Quote(name))
	case errors.Is(err, subscriptions.ErrExists):
		return httpkit.Errorf(http.StatusConflict, "state conflict: subscription %s exists with another definition", event.Quote(name))
	case errors.Is(err, subscriptions.ErrTooMany):
		return httpkit.Errorf(http.StatusConflict, "state conflict: too many subscriptions")
	case errors.Is(err, subscriptions.ErrNotHeld):
		return httpkit.Errorf(http.StatusConflict, "state conflict: delivery is no longer held")
	}
	return a.StoreError(err)
}

// checkName returns the 400 error of an invalid subscription or consumer name.
func checkName(name string) error {
	if !names.Valid(name) {
		return badRequest("invalid request: invalid name %s", event.Quote(name))
	}
	return nil
}

type createBody struct {
	Subscription string          `json:"subscription"`
	Subject      string          `json:"subject"`
	Options      json.RawMessage `json:"options"`
}

// decodeCreate turns a create-subscription body into a definition.
func decodeCreate(r *http.Request) (subscriptions.Definition, error) {
	var body createBody
	if err := httpkit.DecodeBody(r, &body); err != nil {
		return subscriptions.Definition{}, err
	}
	if err := httpkit.CheckOptions(body.Options, subscriptions.OptionNames...); err != nil {
		return subscriptions.Definition{}, err
	}
	var o subscriptions.WireOptions
	if len(body.Options) > 0 {
		if err := decodeOptions(body.Options, &o); err != nil {
			return subscriptions.Definition{}, err
		}
	}
	d, err := subscriptions.ParseDefinition(body.Subscription, body.Subject, o)
	return d, wireError(err)
}

// wireError returns the 400 error of a *subscriptions.WireError, other
// errors as they are.
func wireError(err error) error {
	var wire *subscriptions.WireError
	if errors.As(err, &wire) {
		return badRequest("%s", wire.Message)
	}
	return err
}

func (a *API) createSubscription(w http.ResponseWriter, r *http.Request) {
	d, err := decodeCreate(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	info, err := a.subs.Create(r.Context(), d)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(d.Name, err))
		return
	}
	a.writeSubscription(w, info)
}

// nameBody is the body of the routes that name a subscription.
type nameBody struct {
	Subscription string `json:"subscription"`
}

// decodeName reads a body that names a subscription into v (embedding
// nameBody) and returns the name.
func decodeName(r *http.Request, v any, name func() string) (string, error) {
	if err := httpkit.DecodeBody(r, v); err != nil {
		return "", err
	}
	return name(), checkName(name())
}

func (a *API) readSubscription(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !auth.Allowed(r.Context(), func(g auth.Grants) bool { return g.CanConsume(name) || g.CanOperate() }) {
		auth.Refuse(w, r)
		return
	}
	info, err := a.subs.Get(name)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	a.writeSubscription(w, info)
}

// writeSubscription answers with the read-subscription body of info.
func (a *API) writeSubscription(w http.ResponseWriter, info subscriptions.Info) {
	body, err := a.subscriptionJSON(info)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(info.Definition.Name, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// subscriptionJSON returns the read-subscription body of info.
func (a *API) subscriptionJSON(info subscriptions.Info) ([]byte, error) {
	d := info.Definition
	type consumer struct {
		Consumer    string `json:"consumer"`
		ConnectedAt string `json:"connectedAt"`
		Partitions  []int  `json:"partitions"`
	}
	type partition struct {
		Partition int     `json:"partition"`
		Position  *string `json:"position"`
		Consumer  *string `json:"consumer"`
		Epoch     uint64  `json:"epoch"`
		InFlight  int     `json:"inFlight"`
	}
	consumers := []consumer{}
	for _, c := range info.Consumers {
		consumers = append(consumers, consumer{c.Name, c.ConnectedAt.Format(time.RFC3339Nano), append([]int{}, c.Partitions...)})
	}
	var partitions []partition
	for _, p := range info.Partitions {
		out := partition{Partition: p.Partition, Epoch: p.Epoch, InFlight: p.InFlight}
		if p.HasPosition {
			pos := strconv.FormatUint(p.Position, 10)
			out.Position = &pos
		}
		if p.Consumer != "" {
			owner := p.Consumer
			out.Consumer = &owner
		}
		partitions = append(partitions, out)
	}
	return json.Marshal(struct {
		Subscription string                    `json:"subscription"`
		Subject      string                    `json:"subject"`
		Options      subscriptions.WireOptions `json:"options"`
		CreatedAt    string                    `json:"createdAt"`
		Lag          uint64                    `json:"lag"`
		InFlight     int                       `json:"inFlight"`
		Parked       int                       `json:"parked"`
		Consumers    []consumer                `json:"consumers"`
		Partitions   []partition               `json:"partitions"`
	}{d.Name, d.Subject, d.Options.Wire(), info.CreatedAt.Format(time.RFC3339Nano), info.Lag, info.InFlight, info.Parked, consumers, partitions})
}

func (a *API) readSubscriptions(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	if err := httpkit.DecodeBody(r, &body); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	infos, err := a.subs.List()
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	for _, info := range infos {
		payload, err := a.subscriptionJSON(info)
		if errors.Is(err, subscriptions.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			stream.Error(a.ReadError(err).Message)
			return
		}
		if stream.line("subscription", payload) != nil {
			return
		}
	}
}

func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if err := a.subs.Delete(r.Context(), name); err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	httpkit.WriteJSON(w, struct {
		Subscription string `json:"subscription"`
		Deleted      bool   `json:"deleted"`
	}{name, true})
}

func (a *API) resetSubscription(w http.ResponseWriter, r *http.Request) {
	var body struct {
		nameBody
		Start json.RawMessage `json:"start"`
	}
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	start, err := subscriptions.ParseStart(body.Start)
	if err != nil {
		httpkit.WriteError(w, wireError(err))
		return
	}
	info, err := a.subs.Reset(r.Context(), name, start)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	a.writeSubscription(w, info)
}

// settleBody is the body of the settle routes.
type settleBody struct {
	nameBody
	Deliveries []string `json:"deliveries"`
	After      *string  `json:"after"`
	By         *string  `json:"by"`
	Reason     *string  `json:"reason"`
}

// decodeTokens parses the tokens of a settle: 1 to maxTokens of them.
func decodeTokens(raw []string) ([]subscriptions.Token, error) {
	if len(raw) == 0 || len(raw) > maxTokens {
		return nil, badRequest("invalid request: deliveries must hold 1 to %d tokens", maxTokens)
	}
	tokens := make([]subscriptions.Token, len(raw))
	for i, text := range raw {
		t, err := subscriptions.ParseToken(text)
		if err != nil {
			return nil, badRequest("invalid delivery: %s", event.Quote(text))
		}
		tokens[i] = t
	}
	return tokens, nil
}

// settleHandler returns the handler of a settle route: its answer counts
// the settled deliveries under key and lists the stale tokens.
func (a *API) settleHandler(action subscriptions.Action, key string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body settleBody
		name, err := decodeName(r, &body, func() string { return body.Subscription })
		if err != nil {
			httpkit.WriteError(w, err)
			return
		}
		if !auth.Allowed(r.Context(), consumeNeed(name)) {
			auth.Refuse(w, r)
			return
		}
		tokens, err := decodeTokens(body.Deliveries)
		if err != nil {
			httpkit.WriteError(w, err)
			return
		}
		s := subscriptions.Settle{Subscription: name, Tokens: tokens, Action: action}
		if action == subscriptions.Retry && body.After != nil {
			if s.After, err = time.ParseDuration(*body.After); err != nil || s.After < 0 || s.After > maxRetryDelay {
				httpkit.WriteError(w, badRequest("invalid request: after must be a duration of 0 to 1h, got %s", event.Quote(*body.After)))
				return
			}
		}
		if action == subscriptions.Extend && body.By != nil {
			if s.After, err = time.ParseDuration(*body.By); err != nil || s.After < minExtension || s.After > maxExtension {
				httpkit.WriteError(w, badRequest("invalid request: by must be a duration of 1s to 1h, got %s", event.Quote(*body.By)))
				return
			}
		}
		if action == subscriptions.Park && body.Reason != nil {
			if len(*body.Reason) > maxReasonLength {
				httpkit.WriteError(w, badRequest("invalid request: reason longer than %d bytes", maxReasonLength))
				return
			}
			s.Reason = *body.Reason
		}
		settled, err := a.subs.Settle(r.Context(), s)
		if err != nil {
			httpkit.WriteError(w, a.subscriptionError(name, err))
			return
		}
		stale := []string{}
		for _, t := range settled.Stale {
			stale = append(stale, t.String())
		}
		httpkit.WriteJSON(w, map[string]any{key: settled.Done, "stale": stale})
	}
}

func (a *API) readParkedEvents(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	parked, err := a.subs.Parked(name)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	view := a.store.View()
	for _, pk := range parked {
		rec, err := readOne(view, pk.EventID)
		if err != nil {
			stream.Error(a.ReadError(err).Message)
			return
		}
		line := []byte(`{"partition":` + strconv.Itoa(pk.Partition) + `,"attempts":` + strconv.Itoa(pk.Attempts) +
			`,"parkedAt":` + strconv.Quote(pk.At.Format(time.RFC3339Nano)) + `,"reason":`)
		if pk.Reason == "" {
			line = append(line, "null"...)
		} else {
			reason, _ := json.Marshal(pk.Reason)
			line = append(line, reason...)
		}
		line = append(append(line, `,"event":`...), a.emitter.Append(nil, rec)...)
		if stream.line("parkedEvent", append(line, '}')) != nil {
			return
		}
	}
}

func (a *API) replayParkedEvents(w http.ResponseWriter, r *http.Request) {
	var body struct {
		nameBody
		EventIDs []string `json:"eventIds"`
	}
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	var ids []uint64
	if body.EventIDs != nil {
		ids = []uint64{}
		for _, s := range body.EventIDs {
			id, ok := event.ParseID(s)
			if !ok {
				httpkit.WriteError(w, badRequest("invalid event id: %s", event.Quote(s)))
				return
			}
			ids = append(ids, id)
		}
	}
	n, err := a.subs.Replay(r.Context(), name, ids)
	if err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	httpkit.WriteJSON(w, map[string]int{"replayed": n})
}

// consumeSubscription is POST /api/v1/consume-subscription: the stream of
// one consumer's assignment and deliveries, until the client leaves, a
// consumer of the same name replaces it, or the subscription is deleted.
func (a *API) consumeSubscription(w http.ResponseWriter, r *http.Request) {
	var body struct {
		nameBody
		Consumer string `json:"consumer"`
	}
	name, err := decodeName(r, &body, func() string { return body.Subscription })
	if err == nil {
		err = checkName(body.Consumer)
	}
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !auth.Allowed(r.Context(), consumeNeed(name)) {
		auth.Refuse(w, r)
		return
	}
	if _, err := a.subs.Get(name); err != nil {
		httpkit.WriteError(w, a.subscriptionError(name, err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	produced, ended := stream.pump(newLinePipe(), func(ctx context.Context, put putFunc) error {
		return a.consume(ctx, name, body.Consumer, func(line []byte) error { return put(0, line) })
	}, true, nil)
	if ended == nil && produced != nil {
		stream.Error(a.consumeError(name, produced))
	}
}

// consumeError is the message of the error line that ends a consume stream.
func (a *API) consumeError(name string, err error) string {
	switch {
	case errors.Is(err, subscriptions.ErrReplaced), errors.Is(err, subscriptions.ErrDeleted):
		return err.Error()
	}
	var apiErr *httpkit.Error
	if errors.As(a.subscriptionError(name, err), &apiErr) {
		return apiErr.Message
	}
	return httpkit.ErrUnexpected.Message
}

// consume connects the consumer and puts its lines until ctx ends or the
// consumer does.
func (a *API) consume(ctx context.Context, name, consumer string, put func(line []byte) error) error {
	c, err := a.subs.Connect(ctx, name, consumer)
	if err != nil {
		return err
	}
	defer func() { _ = a.subs.Disconnect(context.WithoutCancel(ctx), c) }()
	partitions, changed := c.Partitions()
	if err := put(assignmentLine(partitions)); err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	now := make(chan struct{}) // closed: waiting on it does not wait
	close(now)
	for {
		written, committed := a.store.Changed(), c.Committed()
		polled := time.Now()
		deliveries, more, err := a.subs.Poll(ctx, c)
		if err != nil {
			return err
		}
		if err := a.deliver(ctx, deliveries, polled, put); err != nil {
			return err
		}
		timer.Stop()
		wait := written
		if more { // the next batch at once
			wait = now
		} else if due, ok := a.subs.NextDue(c); ok {
			timer.Reset(max(time.Until(due), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.Ended():
			return c.Err()
		case <-changed:
			partitions, changed = c.Partitions()
			if err := put(assignmentLine(partitions)); err != nil {
				return err
			}
		case <-wait:
		case <-committed: // the subscription's state, on this node
		case <-c.Woken():
		case <-timer.C:
		}
	}
}

// assignmentLine returns the line of a consumer's partitions.
func assignmentLine(partitions []int) []byte {
	payload, _ := json.Marshal(struct {
		Partitions []int `json:"partitions"`
	}{append([]int{}, partitions...)})
	return httpkit.AppendLine(nil, "assignment", payload)
}

// deliver puts the lines of a batch of deliveries polled at polled, in an
// eventstore.subscription.deliver span (none for an empty poll).
func (a *API) deliver(ctx context.Context, deliveries []subscriptions.Delivered, polled time.Time, put func(line []byte) error) error {
	if len(deliveries) == 0 {
		return nil
	}
	_, span := a.tracer.Start(ctx, "eventstore.subscription.deliver", trace.WithTimestamp(polled),
		trace.WithAttributes(attribute.Int("eventstore.subscription.deliveries", len(deliveries))))
	defer span.End()
	for _, d := range deliveries {
		if err := put(a.deliveryLine(d)); err != nil {
			span.SetStatus(codes.Error, "the consumer did not take the deliveries")
			return err
		}
	}
	return nil
}

// deliveryLine returns the line of one delivery, its event as read-events
// sends it.
func (a *API) deliveryLine(d subscriptions.Delivered) []byte {
	line := httpkit.StartLine(make([]byte, 0, 256+len(d.Record.JSON)), "delivery")
	line = d.Token.Append(append(line, `{"delivery":"`...)) // base64url: nothing to escape
	line = strconv.AppendInt(append(line, `","attempt":`...), int64(d.Token.Attempt), 10)
	line = strconv.AppendInt(append(line, `,"partition":`...), int64(d.Token.Partition), 10)
	line = append(a.emitter.Append(append(line, `,"event":`...), d.Record), '}')
	return httpkit.EndLine(line)
}

// readOne returns the record of id in view.
func readOne(view *store.View, id uint64) (event.Record, error) {
	it := view.Scan(store.Scan{From: id, To: id})
	if !it.Next() {
		if err := it.Close(); err != nil {
			return event.Record{}, err
		}
		return event.Record{}, fmt.Errorf("event %d is missing", id)
	}
	r := it.Record()
	r.JSON = bytes.Clone(r.JSON)
	return r, it.Close()
}

// decodeAcknowledge decodes the acknowledge member of a write-events body:
// {"subscription":…,"deliveries":[…]}.
func (a *API) decodeAcknowledge(raw []byte) (*subscriptions.Settle, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var body struct {
		nameBody
		Deliveries []string `json:"deliveries"`
	}
	if err := httpkit.DecodeJSON(raw, &body); err != nil {
		return nil, err
	}
	if err := checkName(body.Subscription); err != nil {
		return nil, err
	}
	tokens, err := decodeTokens(body.Deliveries)
	if err != nil {
		return nil, err
	}
	if a.subs == nil {
		return nil, a.subscriptionError(body.Subscription, subscriptions.ErrNotFound)
	}
	return &subscriptions.Settle{Subscription: body.Subscription, Tokens: tokens, Action: subscriptions.Acknowledge}, nil
}
