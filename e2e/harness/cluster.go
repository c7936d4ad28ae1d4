package harness

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// Target is what a test speaks to: one Instance, or a Cluster of nodes on
// one database.
type Target interface {
	// Do sends a request to a node (a random one in a cluster).
	Do(method, path, token, body string, header ...string) Response
	// URL returns the base URL of a node's listener with scheme (a random
	// node in a cluster): what is sent on one connection stays on one node.
	URL(scheme string) string
	// Nodes returns the processes behind the target.
	Nodes() []*Instance
}

// Nodes returns the instance itself.
func (inst *Instance) Nodes() []*Instance { return []*Instance{inst} }

// Postgres returns the arguments of a PostgreSQL-mode node on database url,
// on a free port with the harness token, followed by extra.
func Postgres(url string, extra ...string) []string {
	return append([]string{"run", "--api-token=" + Token, "--storage-backend=postgres", "--postgres-url=" + url,
		"--http-enabled", "--https-enabled=false", "--http-port=0"}, extra...)
}

// Cluster is several nodes started with the same arguments; every request
// goes to a node picked at random.
type Cluster struct {
	t     testing.TB
	bin   string
	args  []string
	mu    sync.Mutex
	nodes []*Instance
	rng   *rand.Rand
}

// StartCluster starts n nodes with args, one after the other (the first
// creates the database schema), and waits until each is running.
func StartCluster(t testing.TB, bin string, n int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: bin, args: args, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	for i := 0; i < n; i++ {
		c.nodes = append(c.nodes, Start(t, bin, args...))
	}
	return c
}

// Replace starts a new node in place of node i, which the caller stopped.
func (c *Cluster) Replace(i int) *Instance {
	c.t.Helper()
	inst := Start(c.t, c.bin, c.args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[i] = inst
	return inst
}

// Node returns a random node.
func (c *Cluster) Node() *Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.rng.IntN(len(c.nodes))]
}

// Do sends the request to a random node.
func (c *Cluster) Do(method, path, token, body string, header ...string) Response {
	return c.Node().Do(method, path, token, body, header...)
}

// URL returns the base URL of a random node.
func (c *Cluster) URL(scheme string) string { return c.Node().URL(scheme) }

// Nodes returns the nodes in the order they were started.
func (c *Cluster) Nodes() []*Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Instance(nil), c.nodes...)
}
