package eventapi

import (
	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// The needs of a token's grants that the request's body names
// (docs/api.md §1.2a); the route's permission was checked before it was
// read. A handler checks them with auth.Allowed, which keeps them as
// conditions of the request's stream, and answers a request they refuse
// with auth.Refuse.

// readNeed is the need of reading subject (and its subtree), and the
// subject of from, if any.
func readNeed(subject string, from *store.FromLatest) auth.Need {
	return func(g auth.Grants) bool {
		return g.CanRead(subject) && (from == nil || g.CanRead(from.Subject))
	}
}

// writeNeed is the need of writing candidates under preconditions: every
// event's subject under a write prefix, every subject a precondition reads
// under a read prefix, and an EventQL precondition only with the query
// grant.
func writeNeed(candidates []event.Candidate, preconditions []store.Precondition) auth.Need {
	return func(g auth.Grants) bool {
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
}

// consumeNeed is the need of consuming and settling the subscription name.
func consumeNeed(name string) auth.Need {
	return func(g auth.Grants) bool { return g.CanConsume(name) }
}
