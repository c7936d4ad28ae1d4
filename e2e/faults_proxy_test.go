package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// dbProxies are the TCP proxies, one per node, between the nodes and the
// database: Toxiproxy's library in the test process, each listening on its
// node's host-side veth address and forwarding to PostgreSQL on 127.0.0.1.
type dbProxies struct {
	proxies []*toxiproxy.Proxy
}

// newDBProxies starts a proxy to upstream on each of listen (an address
// without port: a free port is picked); they stop when the test ends.
func newDBProxies(t *testing.T, upstream string, listen []string) *dbProxies {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	// The toxics log through zerolog's global logger, at trace level: keep
	// them quiet while the test runs.
	level := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	p := &dbProxies{}
	t.Cleanup(func() {
		for _, proxy := range p.proxies {
			proxy.Stop()
		}
		zerolog.SetGlobalLevel(level)
	})
	for i, addr := range listen {
		proxy := toxiproxy.NewProxy(server, fmt.Sprintf("node%d", i), net.JoinHostPort(addr, "0"), upstream)
		if err := proxy.Start(); err != nil {
			t.Fatalf("proxy on %s: %v", addr, err)
		}
		p.proxies = append(p.proxies, proxy)
	}
	return p
}

// port returns the port proxy i listens on.
func (p *dbProxies) port(i int) int {
	_, port, _ := net.SplitHostPort(p.proxies[i].Listen)
	n, _ := strconv.Atoi(port)
	return n
}

// toxic is one Toxiproxy toxic, as its JSON API takes it.
type toxic struct {
	name, kind, stream string
	attributes         string // JSON object
}

// add adds the toxic to every proxy; both directions get it when stream is
// empty.
func (p *dbProxies) add(tx toxic) error {
	streams := []string{tx.stream}
	if tx.stream == "" {
		streams = []string{"upstream", "downstream"}
	}
	for _, proxy := range p.proxies {
		for _, s := range streams {
			body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, tx.name+"_"+s, tx.kind, s, tx.attributes)
			if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
				return fmt.Errorf("add toxic %s to %s: %w", tx.name, proxy.Name, err)
			}
		}
	}
	return nil
}

// redirect points every proxy at a new upstream (a promoted standby),
// closing the connections to the old one.
func (p *dbProxies) redirect(upstream string) error {
	for _, proxy := range p.proxies {
		if err := proxy.Update(&toxiproxy.Proxy{Listen: proxy.Listen, Upstream: upstream, Enabled: true}); err != nil {
			return fmt.Errorf("redirect %s to %s: %w", proxy.Name, upstream, err)
		}
	}
	return nil
}

// clear removes every toxic of every proxy.
func (p *dbProxies) clear() {
	for _, proxy := range p.proxies {
		proxy.Toxics.ResetToxics(context.Background())
	}
}
