package opsapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/eventapi"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// VerifyStorePath is the path of the online verification.
const VerifyStorePath = "/api/v1/verify-store"

// verification is the payload of the line that ends a verification.
type verification struct {
	Verified bool   `json:"verified"`
	Events   uint64 `json:"events"`
	HeadHash string `json:"headHash,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// NewVerifyStoreRoute returns POST /api/v1/verify-store: the checks of
// `eventstore verify` on the durable snapshot at the request, while the
// service goes on serving and writing. The answer is an NDJSON stream of
// heartbeat lines while the verification runs and one verification line
// at its end; it counts among the streams --max-streams bounds.
func NewVerifyStoreRoute(s *store.Store, api *eventapi.API, log *zap.Logger) httpkit.Route {
	log = log.Named("opsapi")
	return httpkit.Route{Method: http.MethodPost, Path: VerifyStorePath, Permission: httpkit.PermitOperate, Handler: api.AdmitStream(func(w http.ResponseWriter, r *http.Request) {
		body, err := httpkit.ReadBody(r)
		if err == nil {
			err = httpkit.DecodeJSON(body, &struct{}{})
		}
		if err != nil {
			httpkit.WriteError(w, err)
			return
		}
		stream := api.StartLineStream(w, r)
		defer stream.End()
		failed, ended := stream.Produce(func(ctx context.Context, put func(line []byte) error) error {
			ctx, span := api.Tracer().Start(ctx, "eventstore.verify")
			defer span.End()
			v, err := verifyStore(ctx, s, log)
			span.SetAttributes(attribute.Bool("eventstore.verify.verified", v.Verified), attribute.Int64("eventstore.verify.events", int64(v.Events)))
			if err != nil {
				return err
			}
			payload, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return put(httpkit.AppendLine(nil, "verification", payload))
		})
		if ended == nil && failed != nil && r.Context().Err() == nil {
			stream.Error(api.ReadError(failed).Message)
		}
	})}
}

// verifyStore verifies the durable snapshot of s and logs the outcome. A
// problem found is a verification; only reading failing is an error.
func verifyStore(ctx context.Context, s *store.Store, log *zap.Logger) (verification, error) {
	start := time.Now()
	head, n, err := verify.Online(ctx, s, nil)
	took := zap.Duration("took", time.Since(start))
	var corrupt *store.CorruptionError
	switch {
	case err == nil:
		log.Info("store verified", zap.Uint64("events", n), zap.String("headHash", head.LastHash), took)
		return verification{Verified: true, Events: n, HeadHash: head.LastHash}, nil
	case errors.As(err, &corrupt):
		log.Error("store verification found a problem", zap.Uint64("events", n), zap.String("problem", corrupt.Detail), took)
		return verification{Events: n, Problem: corrupt.Detail}, nil
	}
	return verification{}, err
}
