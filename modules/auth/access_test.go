package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

func TestUnder(t *testing.T) {
	cases := []struct {
		subject, prefix string
		want            bool
	}{
		{"/orders", "/orders", true},
		{"/orders/42", "/orders", true},
		{"/orders/42/lines", "/orders", true},
		{"/ordersx", "/orders", false},
		{"/order", "/orders", false},
		{"/", "/orders", false},
		{"/anything", "/", true},
		{"/", "/", true},
	}
	for _, c := range cases {
		if got := Under(c.subject, c.prefix); got != c.want {
			t.Errorf("Under(%q, %q) = %v, want %v", c.subject, c.prefix, got, c.want)
		}
	}
}

func TestGrants(t *testing.T) {
	g := Grants{Read: []string{"/orders", "/invoices"}, Write: []string{"/invoices"}, Consume: []string{"invoicer"}}
	for _, c := range []struct {
		p    httpkit.Permission
		want bool
	}{{httpkit.PermitAnyToken, true}, {httpkit.PermitRead, true}, {httpkit.PermitQuery, false}, {httpkit.PermitWrite, true},
		{httpkit.PermitSchemas, false}, {httpkit.PermitConsume, true}, {httpkit.PermitConsumeOrOperate, true},
		{httpkit.PermitOperate, false}, {httpkit.PermitAdmin, false}} {
		if got := g.Allows(c.p); got != c.want {
			t.Errorf("Allows(%d) = %v, want %v", c.p, got, c.want)
		}
	}
	if !g.CanRead("/orders/1") || g.CanRead("/ordersx") || !g.CanWrite("/invoices/9") || g.CanWrite("/orders/1") {
		t.Error("prefixes")
	}
	if !g.CanConsume("invoicer") || g.CanConsume("other") || g.CanQuery() || g.CanOperate() {
		t.Error("names and flags")
	}
	if (Grants{Schemas: true}).Allows(httpkit.PermitSchemas) || !(Grants{Schemas: true, Query: true}).Allows(httpkit.PermitSchemas) {
		t.Error("register-event-schema needs schemas and query")
	}
	if !(Grants{Consume: []string{"*"}}).CanConsume("any") {
		t.Error(`consume "*"`)
	}
	for p := httpkit.PermitAdmin; p <= httpkit.PermitOperate; p++ {
		if !AllGrants.Allows(p) {
			t.Errorf("admin is refused %d", p)
		}
	}
	if !AllGrants.CanRead("/x") || !AllGrants.CanWrite("/x") || !AllGrants.CanConsume("x") || !AllGrants.CanQuery() || !AllGrants.CanOperate() {
		t.Error("admin may do everything")
	}
}

func digestOf(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

func TestIdentify(t *testing.T) {
	ts, err := TokenLines("first-token\n\n  second-token  \nthird-token\n")
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"Bearer first-token":   "api-token-1",
		"bearer  second-token": "api-token-2",
		"BEARER third-token":   "api-token-3",
		"Bearer fourth-token":  "",
	} {
		tok, presented := ts.Identify(header)
		if !presented || (want == "") != (tok == nil) || (tok != nil && tok.Name != want) {
			t.Errorf("Identify(%q) = %v, %v; want %q", header, tok, presented, want)
		}
	}
	for _, header := range []string{"", "Bearer", "Bearer ", "Basic first-token", "first-token"} {
		if tok, presented := ts.Identify(header); tok != nil || presented {
			t.Errorf("Identify(%q) = %v, %v; want nothing presented", header, tok, presented)
		}
	}
	if one, err := TokenLines("only\n"); err != nil || one.Len() != 1 || one.Named("api-token") == nil {
		t.Errorf("one line: %v %v", one, err)
	}
	if _, err := TokenLines(" \n\n"); err == nil {
		t.Error("no token accepted")
	}
	if _, err := TokenLines("a\nb\na\n"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a repeated token: %v", err)
	}
}

func TestLoadAccessFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("operator", "operator-token\n")
	good := write("access.yaml", `tokens:
  - name: billing-service
    sha256: `+digestOf("billing-token")+`
    grants:
      read: ["/orders", "/invoices"]
      write: ["/invoices"]
      consume: ["invoicer"]
    expires: 2027-06-30T00:00:00Z
  - name: dashboard
    sha256: `+digestOf("dashboard-token")+`
    grants: {read: ["/"], query: true}
  - name: operator
    tokenFile: operator
    grants: {admin: true}
`)
	ts, err := LoadAccessFile(good)
	if err != nil {
		t.Fatal(err)
	}
	billing, _ := ts.Identify("Bearer billing-token")
	if billing == nil || billing.Name != "billing-service" || !billing.Grants.CanWrite("/invoices/1") || billing.Grants.CanWrite("/orders/1") {
		t.Fatalf("billing: %+v", billing)
	}
	if !billing.Expires.Equal(time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)) || billing.Expired(time.Date(2027, 6, 29, 0, 0, 0, 0, time.UTC)) || !billing.Expired(billing.Expires) {
		t.Errorf("expiry: %v", billing.Expires)
	}
	if op, _ := ts.Identify("Bearer operator-token"); op == nil || !op.Grants.Admin || !op.Expires.IsZero() {
		t.Errorf("operator from its token file: %+v", op)
	}
	if d, _ := ts.Identify("Bearer dashboard-token"); d == nil || !d.Grants.CanRead("/anything") || !d.Grants.CanQuery() || d.Grants.Allows(httpkit.PermitWrite) {
		t.Errorf("dashboard: %+v", d)
	}
	bad := map[string]string{
		"unknown key":        "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n    grants: {admin: true}\n    colour: red\n",
		"unknown grant":      "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n    grants: {delete: true}\n",
		"duplicate name":     "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n  - name: a\n    sha256: " + digestOf("b") + "\n",
		"duplicate token":    "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n  - name: b\n    sha256: " + digestOf("a") + "\n",
		"invalid name":       "tokens:\n  - name: a b\n    sha256: " + digestOf("a") + "\n",
		"both ways":          "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n    tokenFile: operator\n",
		"neither way":        "tokens:\n  - name: a\n",
		"short digest":       "tokens:\n  - name: a\n    sha256: abcd\n",
		"missing token file": "tokens:\n  - name: a\n    tokenFile: nowhere\n",
		"bad prefix":         "tokens:\n  - name: a\n    sha256: " + digestOf("a") + "\n    grants: {read: [orders]}\n",
		"no tokens":          "tokens: []\n",
		"not yaml":           "tokens: [\n",
	}
	for what, text := range bad {
		if _, err := LoadAccessFile(write("bad.yaml", text)); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	if _, err := LoadAccessFile(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Error("an absent file accepted")
	}
}

// BenchmarkIdentify compares a presented token with 1,000: its time is the
// same whichever token matches, or none.
func BenchmarkIdentify(b *testing.B) {
	var lines []string
	for i := range 1000 {
		lines = append(lines, "token-"+strings.Repeat("x", 32)+"-"+string(rune('a'+i%26))+strings.Repeat("y", i%7)+"-"+hex.EncodeToString([]byte{byte(i >> 8), byte(i)}))
	}
	ts, err := TokenLines(strings.Join(lines, "\n"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, token string }{{"first", lines[0]}, {"last", lines[len(lines)-1]}, {"none", "no-such-token"}} {
		b.Run(c.name, func(b *testing.B) {
			header := "Bearer " + c.token
			for b.Loop() {
				ts.Identify(header)
			}
		})
	}
}
