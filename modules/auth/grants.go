package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// Grants are what a token may do (docs/api.md §1.2a): read and write
// subjects under prefixes, run EventQL queries, register schemas, consume
// subscriptions by name ("*": all), operate the store, or everything.
type Grants struct {
	Read    []string `yaml:"read,omitempty" json:"read,omitempty"`
	Write   []string `yaml:"write,omitempty" json:"write,omitempty"`
	Query   bool     `yaml:"query,omitempty" json:"query,omitempty"`
	Schemas bool     `yaml:"schemas,omitempty" json:"schemas,omitempty"`
	Consume []string `yaml:"consume,omitempty" json:"consume,omitempty"`
	Operate bool     `yaml:"operate,omitempty" json:"operate,omitempty"`
	// Metrics shows the series of every subscription in the metrics of
	// health, and grants nothing else: a scrape token's grant.
	Metrics bool `yaml:"metrics,omitempty" json:"metrics,omitempty"`
	Admin   bool `yaml:"admin,omitempty" json:"admin,omitempty"`
}

// AllGrants are the grants of a token that may do everything: the token
// of --api-token or --api-token-file.
var AllGrants = Grants{Admin: true}

// Allows reports whether g may call a route that requires p, before the
// route's subjects or subscription names are known.
func (g Grants) Allows(p httpkit.Permission) bool {
	if g.Admin {
		return true
	}
	switch p {
	case httpkit.PermitAnyToken:
		return true
	case httpkit.PermitRead:
		return len(g.Read) > 0
	case httpkit.PermitQuery:
		return g.Query
	case httpkit.PermitWrite:
		return len(g.Write) > 0
	case httpkit.PermitSchemas:
		return g.Schemas && g.Query // registration tells about every event of the type
	case httpkit.PermitIndexes:
		return g.Schemas
	case httpkit.PermitReadOrQuery:
		return len(g.Read) > 0 || g.Query
	case httpkit.PermitConsume:
		return len(g.Consume) > 0
	case httpkit.PermitConsumeOrOperate:
		return len(g.Consume) > 0 || g.Operate
	case httpkit.PermitOperate:
		return g.Operate
	}
	return false
}

// CanRead reports whether g may read subject (and, as its prefix grants
// the subtree, the subjects below it).
func (g Grants) CanRead(subject string) bool { return g.Admin || underAny(subject, g.Read) }

// CanWrite reports whether g may write events of subject.
func (g Grants) CanWrite(subject string) bool { return g.Admin || underAny(subject, g.Write) }

// CanQuery reports whether g may run EventQL queries, which read the
// whole store.
func (g Grants) CanQuery() bool { return g.Admin || g.Query }

// CanConsume reports whether g may consume and settle the subscription
// name.
func (g Grants) CanConsume(name string) bool {
	return g.Admin || slices.Contains(g.Consume, "*") || slices.Contains(g.Consume, name)
}

// CanSeeSubscriptionMetrics reports whether the metrics shown to g hold
// the series of the subscription name ("*": of every one): with metrics,
// or with what read-subscription of it needs (consume of it, or operate).
func (g Grants) CanSeeSubscriptionMetrics(name string) bool {
	return g.Metrics || g.CanOperate() || g.CanConsume(name)
}

// CanOperate reports whether g may operate the store.
func (g Grants) CanOperate() bool { return g.Admin || g.Operate }

// underAny reports whether subject lies under one of prefixes.
func underAny(subject string, prefixes []string) bool {
	for _, p := range prefixes {
		if Under(subject, p) {
			return true
		}
	}
	return false
}

// Under reports whether subject lies under prefix: is it, or below it
// ("/orders" holds "/orders/42", not "/ordersx"); "/" holds every subject.
func Under(subject, prefix string) bool {
	return prefix == "/" || subject == prefix || strings.HasPrefix(subject, prefix) && subject[len(prefix)] == '/'
}

// validate checks the prefixes and names of g.
func (g Grants) validate() error {
	for _, list := range []struct {
		what     string
		prefixes []string
	}{{"read", g.Read}, {"write", g.Write}} {
		for _, p := range list.prefixes {
			if !strings.HasPrefix(p, "/") || (p != "/" && strings.HasSuffix(p, "/")) || strings.Contains(p, "//") {
				return fmt.Errorf("grant %s: %q is no subject prefix (a subject such as /orders, or /)", list.what, p)
			}
		}
	}
	for _, name := range g.Consume {
		if name == "" {
			return fmt.Errorf("grant consume: an empty subscription name")
		}
	}
	return nil
}
