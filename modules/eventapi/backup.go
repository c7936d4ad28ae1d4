package eventapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventstore-service/eventstore/modules/backup"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// Paths of the backup and restore endpoints.
const (
	BackupPath  = "/api/v1/backup"
	RestorePath = "/api/v1/restore"
)

// backupEvents is POST /api/v1/backup: a consistent snapshot as NDJSON,
// every event durable when the request arrived, then (unless the body says
// "schemas":false) every schema registered then, then (if it says
// "dataIndexes":true) the definition of every data index registered then,
// then (if it says "subscriptions":true) every subscription with its
// positions then. The headers tell how many event lines follow and the
// hash of the last, so that a client can tell a complete backup from a cut
// one. Writes go on meanwhile.
func (a *API) backupEvents(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	var opts struct {
		Schemas       *bool `json:"schemas"`
		Subscriptions bool  `json:"subscriptions"`
		DataIndexes   bool  `json:"dataIndexes"`
	}
	if err := httpkit.DecodeJSON(body, &opts); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	view, err := a.store.Current()
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	n := view.Count()
	headHash := event.ZeroHash
	if n > 0 {
		it := view.Scan(store.Scan{From: n - 1, To: n - 1})
		if it.Next() {
			headHash = it.Record().Hash()
		}
		if err := it.Close(); err != nil || headHash == event.ZeroHash {
			httpkit.WriteError(w, a.ReadError(errors.Join(err, errors.New("the last event of the snapshot is missing"))))
			return
		}
	}
	w.Header().Set("Eventstore-Backup-Events", strconv.FormatUint(n, 10))
	w.Header().Set("Eventstore-Backup-Head-Hash", headHash)
	withSchemas := opts.Schemas == nil || *opts.Schemas
	var subs []subscriptions.Info // as they are now, the moment of the snapshot
	if opts.Subscriptions && a.subs != nil {
		if subs, err = a.subs.List(); err != nil {
			httpkit.WriteError(w, a.ReadError(err))
			return
		}
	}
	var indexes []*store.DataIndex // as they are now
	if opts.DataIndexes {
		if indexes, _, err = a.store.DataIndexes(); err != nil {
			httpkit.WriteError(w, a.ReadError(err))
			return
		}
	}
	_, span := a.tracer.Start(r.Context(), "eventstore.backup", trace.WithAttributes(attribute.Int64("eventstore.backup.events", int64(n))))
	defer span.End()
	stream := a.startStream(w, r)
	defer stream.end()
	readErr, ended := stream.pump(newLinePipe(), func(ctx context.Context, put putFunc) error {
		var (
			sc   jsonscan.Scanner
			line []byte
			err  error
			kept backup.KeptFunc
		)
		if keeper, ok := a.store.Backend().(store.DigestKeeper); ok {
			kept = keeper.KeptDataSum
		}
		if n > 0 {
			it := view.Scan(store.Scan{From: 0, To: n - 1})
			for it.Next() {
				if line, err = backup.AppendEvent(line[:0], it.Record(), &sc, kept); err == nil {
					err = put(it.Record().ID, line)
				}
				if err != nil {
					it.Close()
					return err
				}
			}
			if err := it.Close(); err != nil {
				return err
			}
		}
		if withSchemas {
			for _, sw := range view.Schemas() {
				if err := put(0, backup.AppendSchema(line[:0], sw.Type, sw.Raw)); err != nil {
					return err
				}
			}
		}
		for _, x := range indexes {
			if err := put(0, backup.AppendDataIndex(line[:0], x.Definition)); err != nil {
				return err
			}
		}
		for _, info := range subs {
			if err := put(0, subscriptions.AppendBackup(line[:0], info, n)); err != nil {
				return err
			}
		}
		return nil
	}, false, nil)
	if ended == nil && readErr != nil {
		stream.Error(a.ReadError(readErr).Message)
	}
}

// restoreBackup is POST /api/v1/restore: the backup in the body, streamed
// and proved line by line, into the empty store, all or nothing; from the
// moment the store was found empty until it ends, every other request but
// ping and health answers 503 (a refused restore disturbs no one). 200
// with the number of events and schemas and the head hash. A body that
// stalls ends it (408), as does the stop phase (503); the store is empty
// again then.
func (a *API) restoreBackup(w http.ResponseWriter, r *http.Request) {
	if a.restores.Restoring() {
		httpkit.RefuseBody(w, r, httpkit.ErrRestoring)
		return
	}
	began := false
	defer func() {
		if began {
			a.restores.EndRestore()
		}
	}()
	begin := func() error {
		if began = a.restores.BeginRestore(); !began {
			return httpkit.ErrRestoring
		}
		return nil
	}
	src := backup.ReadAhead(backup.NewReader(r.Body, a.backup))
	defer src.Close()
	// A failed read of the body cancels the request's context, which would
	// hide why: the body's own errors end the restore (a client gone too).
	ctx, span := a.tracer.Start(context.WithoutCancel(r.Context()), "eventstore.restore")
	restored, err := restore.Into(ctx, a.store, src, restore.Hooks{Begin: begin}, a.log)
	span.SetAttributes(attribute.Int64("eventstore.restore.events", int64(restored.Events)))
	if err != nil {
		span.SetStatus(codes.Error, "the restore failed")
	}
	span.End()
	var (
		backupErr *restore.BackupError
		apiErr    *httpkit.Error
	)
	switch {
	case err == nil && restored.States > 0 && a.subs != nil:
		if err := a.subs.Load(); err != nil {
			httpkit.RefuseBody(w, r, a.StoreError(fmt.Errorf("load the restored subscriptions: %w", err)))
			return
		}
		fallthrough
	case err == nil:
		httpkit.WriteJSON(w, struct {
			Events   uint64 `json:"events"`
			Schemas  int    `json:"schemas"`
			HeadHash string `json:"headHash"`
		}{restored.Events, restored.Schemas, restored.HeadHash})
	case errors.As(err, &apiErr): // the body's time limits, the stop phase, another restore
		httpkit.RefuseBody(w, r, apiErr)
	case r.Context().Err() != nil: // the client is gone
	case errors.Is(err, restore.ErrNotEmpty):
		httpkit.RefuseBody(w, r, httpkit.Errorf(http.StatusConflict, "state conflict: the store is not empty"))
	case errors.As(err, &backupErr):
		httpkit.RefuseBody(w, r, httpkit.Errorf(http.StatusBadRequest, "invalid backup: %s", backupErr.Error()))
	default:
		httpkit.RefuseBody(w, r, a.StoreError(err))
	}
}
