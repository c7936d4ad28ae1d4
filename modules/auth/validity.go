package auth

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrTokenRevoked ends the streams of a token that a reload removed, or
// that no longer has a grant the stream was opened with.
var ErrTokenRevoked = errors.New("token revoked")

// ErrTokenExpired ends the streams of a token at its expiry.
var ErrTokenExpired = errors.New("token expired")

// Need is a condition on a token's grants that a request was allowed by:
// its route's permission, or the subjects or subscription it names.
type Need func(Grants) bool

// validity is the life of a token across the reloads that keep it (the
// same digest): the streams opened with the token watch it and end when a
// reload removes the token or takes from it a grant they need, or at its
// expiry, which a reload may move.
type validity struct {
	mu      sync.Mutex
	grants  Grants
	expires time.Time // zero: never
	removed bool
	streams map[*watch]struct{}
}

// watch is one stream's watch of its token's validity.
type watch struct {
	needs []Need
	end   func(cause error)
	timer *time.Timer // at the expiry; nil without one
}

// newValidity returns the validity of a new token with grants and expiry.
func newValidity(grants Grants, expires time.Time) *validity {
	return &validity{grants: grants, expires: expires, streams: map[*watch]struct{}{}}
}

// add starts the watch of a stream that needs needs and ends by end, and
// returns the function that ends the watch. A stream of a token already
// removed, short of a need, or expired ends at once.
func (v *validity) add(needs []Need, end func(cause error)) (stop func()) {
	w := &watch{needs: needs, end: end}
	v.mu.Lock()
	cause := v.causeLocked(w, time.Now())
	if cause == nil {
		v.streams[w] = struct{}{}
		v.timeLocked(w)
	}
	v.mu.Unlock()
	if cause != nil {
		end(cause)
		return func() {}
	}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.dropLocked(w)
	}
}

// update puts the grants and expiry of a reload in force: the streams that
// lose a need end with ErrTokenRevoked, the others expire at expires.
func (v *validity) update(grants Grants, expires time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	moved := !expires.Equal(v.expires)
	v.grants, v.expires = grants, expires
	v.checkLocked(moved)
}

// remove ends every stream of the token with ErrTokenRevoked.
func (v *validity) remove() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removed = true
	v.checkLocked(false)
}

// checkLocked ends the streams that must end now and, when the expiry
// moved, times the others' again.
func (v *validity) checkLocked(moved bool) {
	now := time.Now()
	for w := range v.streams {
		if cause := v.causeLocked(w, now); cause != nil {
			v.dropLocked(w)
			w.end(cause)
		} else if moved {
			v.timeLocked(w)
		}
	}
}

// causeLocked returns why the stream of w must end at now, or nil.
func (v *validity) causeLocked(w *watch, now time.Time) error {
	if v.removed {
		return ErrTokenRevoked
	}
	for _, need := range w.needs {
		if !need(v.grants) {
			return ErrTokenRevoked
		}
	}
	if !v.expires.IsZero() && !now.Before(v.expires) {
		return ErrTokenExpired
	}
	return nil
}

// timeLocked sets w's timer to the token's expiry.
func (v *validity) timeLocked(w *watch) {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if v.expires.IsZero() {
		return
	}
	at := v.expires
	w.timer = time.AfterFunc(time.Until(at), func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if _, ok := v.streams[w]; ok && v.expires.Equal(at) { // no reload moved it meanwhile
			v.dropLocked(w)
			w.end(ErrTokenExpired)
		}
	})
}

// dropLocked ends the watch w.
func (v *validity) dropLocked(w *watch) {
	delete(v.streams, w)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Allowed reports whether the token of the request whose context is ctx
// meets need, and keeps need as a condition of the request's streams
// (Watch). A request that did not pass the Middleware (the single token
// of --api-token, or a handler's own test) may do everything.
func Allowed(ctx context.Context, need Need) bool {
	p, ok := ctx.Value(passedKey{}).(*passed)
	if !ok {
		return need(AllGrants)
	}
	if !need(p.tok.Grants) {
		return false
	}
	p.needs = append(p.needs, need)
	return true
}

// Watch calls end once (at once, if it must end already) when the stream of the
// request whose context is ctx must end for its token: with
// ErrTokenExpired at the token's expiry, with ErrTokenRevoked when a
// reload removes the token or takes from it a need the request was
// allowed by (its route's permission, and what Allowed checked). The
// request's handler must call Allowed before Watch, and stop when the
// stream ends; end must not block (it may run under the token's lock). A
// request without a token in its context is never ended.
func Watch(ctx context.Context, end func(cause error)) (stop func()) {
	p, ok := ctx.Value(passedKey{}).(*passed)
	if !ok {
		return func() {}
	}
	return p.tok.validity.add(slices.Clone(p.needs), end) // the handler may go on appending to its own
}
