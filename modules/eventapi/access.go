package eventapi

import (
	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// The checks of a token's grants that need the request's body
// (docs/api.md §1.2a); the route's permission was checked before it was
// read. A request they refuse is answered with auth.Refuse.

// mayRead reports whether g may read subject (and its subtree), and the
// subject of from, if any.
func mayRead(g auth.Grants, subject string, from *store.FromLatest) bool {
	return g.CanRead(subject) && (from == nil || g.CanRead(from.Subject))
}

// mayWrite reports whether g may write candidates under preconditions:
// every event's subject under a write prefix, every subject a
// precondition reads under a read prefix, and an EventQL precondition
// only with the query grant.
func mayWrite(g auth.Grants, candidates []event.Candidate, preconditions []store.Precondition) bool {
	for _, c := range candidates {
		if !g.CanWrite(c.Subject) {
			return false
		}
	}
	for _, p := range preconditions {
		if p.Kind == store.ConditionHolds && !g.CanQuery() || p.Kind != store.ConditionHolds && !g.CanRead(p.Subject) {
			return false
		}
	}
	return true
}
