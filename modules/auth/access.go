package auth

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// ReadAccessPath is the path of the route that tells a token what it may
// do.
const ReadAccessPath = "/api/v1/read-access"

// accessAnswer is the body of read-access.
type accessAnswer struct {
	Token   string  `json:"token"`
	Grants  Grants  `json:"grants"`
	Expires *string `json:"expires"`
}

// NewReadAccessRoute returns POST /api/v1/read-access (docs/api.md
// §1.2a): the name, grants and expiry of the request's token, for any
// valid token. The body is ignored.
func NewReadAccessRoute() httpkit.Route {
	return httpkit.Route{Method: http.MethodPost, Path: ReadAccessPath, Permission: httpkit.PermitAnyToken,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ans := accessAnswer{Token: "api-token", Grants: AllGrants}
			if tok := TokenOf(r.Context()); tok != nil {
				ans.Token, ans.Grants = tok.Name, tok.Grants
				if !tok.Expires.IsZero() {
					at := tok.Expires.UTC().Format(time.RFC3339Nano)
					ans.Expires = &at
				}
			}
			body, _ := json.Marshal(ans) // plain strings and lists
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(append(body, '\n'))
		})}
}
