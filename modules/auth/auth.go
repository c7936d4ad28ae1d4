package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

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

// Authenticator checks the bearer token of requests.
type Authenticator struct {
	digest   [sha256.Size]byte
	log      *zap.Logger
	logged   *throttle.Throttle // of the failure log line; the metric counts every failure
	failures prometheus.Counter
}

// FailureLogInterval is how often at most a failed authentication is
// logged; the next line counts those held back in its field suppressed.
const FailureLogInterval = 10 * time.Second

// New returns an Authenticator for token that counts failures in reg.
func New(token string, log *zap.Logger, reg prometheus.Registerer) (*Authenticator, error) {
	if utf8.RuneCountInString(token) < RecommendedTokenLength {
		log.Warn("api token is shorter than 32 characters")
	}
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eventstore_auth_failures_total",
		Help: "Requests rejected with 401 for a missing or wrong API token.",
	})
	if err := reg.Register(failures); err != nil {
		return nil, err
	}
	return &Authenticator{digest: sha256.Sum256([]byte(token)), log: log, logged: throttle.New(FailureLogInterval), failures: failures}, nil
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

// Verify reports whether the Authorization header value carries the token,
// and whether it presented a bearer token at all.
func (a *Authenticator) Verify(authorization string) (ok, presented bool) {
	scheme, token, found := strings.Cut(authorization, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return false, false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return false, false
	}
	digest := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(digest[:], a.digest[:]) == 1, true
}

// Middleware answers 401 unauthorized for protected paths without the token
// and passes everything else on. The paths in public (ping) need no token.
func (a *Authenticator) Middleware(next http.Handler, public ...string) http.Handler {
	publicSet := make(map[string]bool, len(public))
	for _, p := range public {
		publicSet[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Protected(r.URL.Path, publicSet) {
			next.ServeHTTP(w, r)
			return
		}
		ok, presented := a.Verify(r.Header.Get("Authorization"))
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		a.failures.Inc()
		if ok, held := a.logged.Allow(); ok {
			a.log.Warn("authentication failed",
				zap.String("remoteAddr", r.RemoteAddr),
				zap.String("method", r.Method),
				zap.String("route", httpkit.RouteOf(r)),
				zap.Int("suppressed", held))
		}
		challenge := challengeMissing
		if presented {
			challenge = challengeInvalid
		}
		w.Header().Set("WWW-Authenticate", challenge)
		httpkit.RefuseBody(w, r, httpkit.ErrUnauthorized)
	})
}
