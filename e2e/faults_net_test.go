package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// faultNet is the network of the fault suite: one network namespace per
// node, each joined to the host by a veth pair on a /30 of its own. The test
// (in the host namespace) reaches a node on its namespace address, and the
// node reaches the database through its proxy on the host-side address. A
// partition is an nftables table inside the node's namespace that drops the
// packets between the node and that proxy port; nothing outside the
// namespaces changes.
type faultNet struct {
	id    string // unique per run, part of every name
	links []*nsLink
}

// nsLink is one namespace and its veth pair.
type nsLink struct {
	ns       string // network namespace
	hostIf   string // host side of the veth pair
	nsIf     string // namespace side
	hostAddr string // address of hostIf
	nsAddr   string // address of nsIf
	dbPort   int    // port on hostAddr that leads to the database
}

// netTable is the nftables table of the suite in each namespace.
const netTable = "esfault"

// faultNetAvailable returns nil when namespaces and nftables can be used
// here, else why not.
func faultNetAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces and nftables need root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing (apt-get install iproute2 nftables): %w", tool, err)
		}
	}
	return nil
}

// newFaultNet creates n namespaces with their veth pairs and empty nftables
// tables, on a 10.x.y.0/24 that no interface of the host uses. Everything is
// removed when the test ends, also when it fails.
func newFaultNet(t *testing.T, n int) *faultNet {
	t.Helper()
	var raw [3]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	fn := &faultNet{id: hex.EncodeToString(raw[:])}
	subnet, err := freeSubnet(raw[1], raw[2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fn.remove(t))
	for i := 0; i < n; i++ {
		l := &nsLink{
			ns:       fmt.Sprintf("esf-%s-%d", fn.id, i),
			hostIf:   fmt.Sprintf("esf%sh%d", fn.id, i),
			nsIf:     fmt.Sprintf("esf%sn%d", fn.id, i),
			hostAddr: fmt.Sprintf("%s.%d", subnet, 4*i+1),
			nsAddr:   fmt.Sprintf("%s.%d", subnet, 4*i+2),
		}
		fn.links = append(fn.links, l)
		steps := [][]string{
			{"ip", "netns", "add", l.ns},
			{"ip", "link", "add", l.hostIf, "type", "veth", "peer", "name", l.nsIf},
			{"ip", "link", "set", l.nsIf, "netns", l.ns},
			{"ip", "addr", "add", l.hostAddr + "/30", "dev", l.hostIf},
			{"ip", "link", "set", l.hostIf, "up"},
			{"ip", "netns", "exec", l.ns, "ip", "addr", "add", l.nsAddr + "/30", "dev", l.nsIf},
			{"ip", "netns", "exec", l.ns, "ip", "link", "set", l.nsIf, "up"},
			{"ip", "netns", "exec", l.ns, "ip", "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := runCmd(s...); err != nil {
				t.Fatalf("namespace %s: %v", l.ns, err)
			}
		}
		if err := l.nft(fmt.Sprintf("add table inet %[1]s\nadd chain inet %[1]s input { type filter hook input priority 0; }\nadd chain inet %[1]s output { type filter hook output priority 0; }\n", netTable)); err != nil {
			t.Fatalf("namespace %s: %v", l.ns, err)
		}
	}
	return fn
}

// freeSubnet returns a 10.a.b prefix (a in 200..249) that no address of the
// host is in, starting from the random a, b.
func freeSubnet(a, b byte) (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("list the host's addresses: %w", err)
	}
	for try := 0; try < 50; try++ {
		prefix := fmt.Sprintf("10.%d.%d", 200+(int(a)+try)%50, b)
		_, subnet, _ := net.ParseCIDR(prefix + ".0/24")
		used := false
		for _, addr := range addrs {
			if ipnet, ok := addr.(*net.IPNet); ok && (subnet.Contains(ipnet.IP) || ipnet.Contains(subnet.IP)) {
				used = true
			}
		}
		if !used {
			return prefix, nil
		}
	}
	return "", errors.New("no free 10.x.y.0/24 for the test's namespaces")
}

// remove returns the cleanup that deletes the tables, veth pairs and
// namespaces, reporting what it could not delete.
func (fn *faultNet) remove(t *testing.T) func() {
	return func() {
		for _, l := range fn.links {
			var errs []error
			if err := l.nft("delete table inet " + netTable); err != nil {
				errs = append(errs, err)
			}
			if err := runCmd("ip", "link", "del", l.hostIf); err != nil { // deletes the peer too
				errs = append(errs, err)
			}
			if err := runCmd("ip", "netns", "del", l.ns); err != nil {
				errs = append(errs, err)
			}
			if err := errors.Join(errs...); err != nil {
				t.Errorf("remove namespace %s: %v", l.ns, err)
			}
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), "esf-"+fn.id) {
			t.Errorf("namespaces of this run left behind: %s", out)
		}
	}
}

// exec returns the command line that runs args inside the namespace.
func (l *nsLink) exec(args ...string) []string {
	return append([]string{"netns", "exec", l.ns}, args...)
}

// nft runs an nftables script inside the namespace.
func (l *nsLink) nft(script string) error {
	cmd := exec.Command("ip", "netns", "exec", l.ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", l.ns, err, out)
	}
	return nil
}

// partition drops every packet between the node and its way to the
// database, both directions; the node's clients still reach it.
func (l *nsLink) partition() error {
	return l.nft(fmt.Sprintf("add rule inet %[1]s output ip daddr %[2]s tcp dport %[3]d drop\nadd rule inet %[1]s input ip saddr %[2]s tcp sport %[3]d drop\n", netTable, l.hostAddr, l.dbPort))
}

// heal removes the partition.
func (l *nsLink) heal() error {
	return l.nft(fmt.Sprintf("flush chain inet %[1]s output\nflush chain inet %[1]s input\n", netTable))
}

// runCmd runs a command; its error carries the command's output.
func runCmd(args ...string) error {
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
