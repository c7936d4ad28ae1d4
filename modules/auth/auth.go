package auth

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/throttle"
)

// RecommendedTokenLength is the length below which the token draws a warning.
const RecommendedTokenLength = 32

// Challenges sent in the WWW-Authenticate header of a 401.
const (
	challengeMissing = `Bearer realm="eventstore"`
	challengeInvalid = `Bearer realm="eventstore", error="invalid_token"`
)

// Authenticator checks the bearer token of requests against the tokens
// the service knows, and the token's grants against the route's
// permission; it logs the audit lines (logger audit) and counts denials.
type Authenticator struct {
	tokens    atomic.Pointer[Tokens]
	replacing sync.Mutex         // serializes Replace
	log       *zap.Logger        // the audit logger
	logged    *throttle.Throttle // of the 401 line; the metrics count every failure
	failures  prometheus.Counter
	denied    *prometheus.CounterVec
}

// FailureLogInterval is how often at most a failed authentication is
// logged; the next line counts those held back in its field suppressed.
const FailureLogInterval = 10 * time.Second

// New returns an Authenticator of tokens that logs its audit lines to log
// and counts failures and denials in reg.
func New(tokens *Tokens, log *zap.Logger, reg prometheus.Registerer) (*Authenticator, error) {
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eventstore_auth_failures_total",
		Help: "Requests rejected with 401 for a missing or wrong API token.",
	})
	denied := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eventstore_requests_denied_total",
		Help: "Requests denied: 401 for a missing, wrong or expired token (unauthorized), 403 for a token without the permission (forbidden).",
	}, []string{"reason"})
	for _, c := range []prometheus.Collector{failures, denied} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	a := &Authenticator{log: log, logged: throttle.New(FailureLogInterval), failures: failures, denied: denied}
	a.tokens.Store(tokens)
	return a, nil
}

// LoadTokens returns the tokens cfg names: those of its access file, or
// its API token (or the tokens of its token file, one per line), each of
// which may do everything. A short API token draws a warning on log.
func LoadTokens(cfg config.Config, log *zap.Logger) (*Tokens, error) {
	if cfg.AccessFile != "" {
		ts, err := LoadAccessFile(cfg.AccessFile)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", config.FlagAccessFile, err)
		}
		return ts, nil
	}
	ts, err := TokenLines(cfg.APIToken)
	if err != nil {
		return nil, err
	}
	ts.static = cfg.APITokenFile == "" && ts.Len() == 1
	for _, line := range strings.Split(cfg.APIToken, "\n") {
		if line = strings.TrimSpace(line); line != "" && utf8.RuneCountInString(line) < RecommendedTokenLength {
			log.Warn("api token is shorter than 32 characters")
			break
		}
	}
	return ts, nil
}

// Tokens returns the tokens in force.
func (a *Authenticator) Tokens() *Tokens { return a.tokens.Load() }

// Replace puts ts in force instead of the tokens before: requests that
// come after it are checked against ts, and the streams (Watch) of the
// tokens it no longer holds end, as do those of kept tokens that lost a
// grant they need; the others expire at their token's new expiry. It
// returns how many tokens were removed.
func (a *Authenticator) Replace(ts *Tokens) int {
	a.replacing.Lock()
	defer a.replacing.Unlock()
	removed := ts.carry(a.tokens.Load()) // before readers see ts
	a.tokens.Store(ts)
	for i := range ts.list {
		ts.list[i].validity.update(ts.list[i].Grants, ts.list[i].Expires)
	}
	for _, t := range removed {
		t.validity.remove()
	}
	return len(removed)
}

// Protected reports whether path requires the token: every path under /api/
// (judged on the cleaned path, so that a path like //api/v1/write-events is
// protected too) except the public ones, which are public only as they are
// spelled (/api/v1/ping/ and //api/v1/ping are not).
func Protected(p string, public map[string]bool) bool {
	if public[p] {
		return false
	}
	if cleaned := path.Clean(p); cleaned != "/api" {
		p = cleaned
	}
	return strings.HasPrefix(p, "/api/")
}

// Middleware answers 401 unauthorized for protected paths without a valid
// token (wrong, or expired) and 403 for a token whose grants lack the
// route's permission; it passes everything else on, with the token in the
// request's context (TokenOf; none for the single token of --api-token,
// which may do everything and is never revoked). The paths in public
// (ping) need no token.
// Requests of routes that change the store's schemas or operate it are
// audited when they end.
func (a *Authenticator) Middleware(next http.Handler, perm httpkit.Permission, public ...string) http.Handler {
	publicSet := make(map[string]bool, len(public))
	for _, p := range public {
		publicSet[p] = true
	}
	required := a.Require(next, perm)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Protected(r.URL.Path, publicSet) {
			next.ServeHTTP(w, r)
			return
		}
		required.ServeHTTP(w, r)
	})
}

// Require is the Middleware of a route that requires the token whatever
// its path (/mcp, outside /api/).
func (a *Authenticator) Require(next http.Handler, perm httpkit.Permission) http.Handler {
	audited := perm == httpkit.PermitSchemas || perm == httpkit.PermitIndexes || perm == httpkit.PermitOperate || perm == httpkit.PermitAdmin
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ts := a.tokens.Load()
		tok, presented := ts.Identify(r.Header.Get("Authorization"))
		if tok == nil || tok.Expired(start) {
			a.unauthorized(w, r, presented)
			return
		}
		if !tok.Grants.Allows(perm) {
			a.forbid(w, r, tok)
			return
		}
		if !ts.static {
			p := &passed{tok: tok, a: a, needs: []Need{func(g Grants) bool { return g.Allows(perm) }}}
			r = r.WithContext(context.WithValue(r.Context(), passedKey{}, p))
		}
		if !audited {
			next.ServeHTTP(w, r)
			return
		}
		rec := &httpkit.Recorder{ResponseWriter: w}
		note := &auditNote{}
		r = r.WithContext(context.WithValue(r.Context(), auditKey{}, note))
		defer func() {
			status := rec.Status
			if !rec.WroteHeader {
				status = http.StatusOK // what net/http answers for a handler that wrote nothing
			}
			a.audit(tok, r, status, start, note.fields...)
		}()
		next.ServeHTTP(rec, r)
	})
}

// unauthorized answers 401, counts it, and logs it at most once per
// FailureLogInterval.
func (a *Authenticator) unauthorized(w http.ResponseWriter, r *http.Request, presented bool) {
	a.failures.Inc()
	a.denied.WithLabelValues("unauthorized").Inc()
	if ok, held := a.logged.Allow(); ok {
		a.log.Warn("authentication failed",
			zap.String("remoteAddr", r.RemoteAddr),
			zap.String("method", r.Method),
			zap.String("route", httpkit.RouteOf(r)),
			zap.Int("status", http.StatusUnauthorized),
			zap.Int("suppressed", held))
	}
	challenge := challengeMissing
	if presented {
		challenge = challengeInvalid
	}
	w.Header().Set("WWW-Authenticate", challenge)
	httpkit.RefuseBody(w, r, httpkit.ErrUnauthorized)
}

// ErrForbidden refuses a token whose grants lack what a request needs; it
// never says what would have been needed.
var ErrForbidden = &httpkit.Error{Status: http.StatusForbidden, Message: "forbidden: insufficient permissions"}

// forbid answers 403 forbidden: insufficient permissions to the request r
// of tok, counts and audits it.
func (a *Authenticator) forbid(w http.ResponseWriter, r *http.Request, tok *Token) {
	a.denied.WithLabelValues("forbidden").Inc()
	a.audit(tok, r, http.StatusForbidden, time.Now())
	httpkit.RefuseBody(w, r, ErrForbidden)
}

// Refuse answers 403 forbidden: insufficient permissions to a request that
// passed the Middleware, counted and audited like the Middleware's: a
// route calls it when the request's subjects or subscription lie beyond
// the grants of its token (GrantsOf).
func Refuse(w http.ResponseWriter, r *http.Request) {
	if p, ok := r.Context().Value(passedKey{}).(*passed); ok {
		p.a.forbid(w, r, p.tok)
		return
	}
	httpkit.RefuseBody(w, r, ErrForbidden)
}

// audit logs the audit line of the request r of tok, answered status,
// with the fields its handler added (Audit).
func (a *Authenticator) audit(tok *Token, r *http.Request, status int, start time.Time, fields ...zap.Field) {
	line := append([]zap.Field{
		zap.String("token", tok.Name),
		zap.String("route", httpkit.RouteOf(r)),
		zap.Int("status", status),
		zap.String("remote", r.RemoteAddr),
		zap.Duration("duration", time.Since(start))}, fields...)
	if tool := httpkit.ToolOf(r.Context()); tool != "" {
		line = append(line, zap.String("tool", tool))
	}
	a.log.Info("request audited", line...)
}

// auditKey is the context key of the auditNote of an audited request.
type auditKey struct{}

// auditNote holds the fields a handler adds to its request's audit line.
type auditNote struct{ fields []zap.Field }

// Audit adds fields to the audit line of the request of ctx, when the
// request is audited: what an operation did (an erasure's subject and
// count). Only the handler's goroutine may call it.
func Audit(ctx context.Context, fields ...zap.Field) {
	if note, ok := ctx.Value(auditKey{}).(*auditNote); ok {
		note.fields = append(note.fields, fields...)
	}
}

// passedKey is the context key of what the Middleware learned of a
// request: its token, the Authenticator that checked it, and the needs
// it was allowed by (the route's permission, then those of Allowed).
type passedKey struct{}

type passed struct {
	tok   *Token
	a     *Authenticator
	needs []Need // appended by the request's handler goroutine alone
}

// TokenOf returns the token of a request that passed the Middleware, or
// nil (a public route, or a handler called without the Middleware).
func TokenOf(ctx context.Context) *Token {
	if p, ok := ctx.Value(passedKey{}).(*passed); ok {
		return p.tok
	}
	return nil
}

// GrantsOf returns the grants of the token of a request that passed the
// Middleware; a request that did not (a handler's own test) may do
// everything, as the single token may.
func GrantsOf(ctx context.Context) Grants {
	if tok := TokenOf(ctx); tok != nil {
		return tok.Grants
	}
	return AllGrants
}
