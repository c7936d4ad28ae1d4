package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
)

// AccessFileEnv names the environment variable that, set to "admin", has
// every instance started with --api-token=Token run instead with an
// access file whose one token is Token, named AccessAdmin, with the admin
// grant (docs/api.md §1.2a): the tests then speak to a service with access
// control as the EventSourcingDB SDKs do, with one token, and must see no
// difference.
const AccessFileEnv = "EVENTSTORE_E2E_ACCESS_FILE"

// AccessAdmin is the name of the admin token of AccessFileEnv's file.
const AccessAdmin = "e2e-admin"

// AccessFileMode reports whether AccessFileEnv is set to "admin".
func AccessFileMode() bool { return os.Getenv(AccessFileEnv) == "admin" }

// withAccessFile returns args with --api-token=Token replaced by
// --access-file of a file in a temporary directory of t, and whether it
// was, in AccessFileMode; else args unchanged.
func withAccessFile(t testing.TB, args []string) ([]string, bool) {
	if !AccessFileMode() {
		return args, false
	}
	out := make([]string, len(args))
	replaced := false
	for i, arg := range args {
		out[i] = arg
		if arg == "--api-token="+Token {
			digest := sha256.Sum256([]byte(Token))
			file := WriteFile(t, t.TempDir(), "access.yaml", "tokens:\n  - name: "+AccessAdmin+"\n    sha256: "+
				hex.EncodeToString(digest[:])+"\n    grants: {admin: true}\n")
			out[i] = "--access-file=" + file
			replaced = true
		}
	}
	return out, replaced
}

// checkAccessFile makes sure an instance started in AccessFileMode serves
// Token under the access file's name, over its first plain HTTP listener
// (an instance with none is not checked).
func (inst *Instance) checkAccessFile() {
	inst.t.Helper()
	for _, l := range inst.listeners {
		if !strings.HasPrefix(l, "http://") {
			continue
		}
		req, err := http.NewRequest(http.MethodPost, strings.Replace(l, "0.0.0.0", "127.0.0.1", 1)+"/api/v1/read-access", nil)
		if err != nil {
			inst.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+Token)
		req.Close = true // leaves no idle connection to count against --max-connections
		resp, err := inst.Client.Do(req)
		if err != nil {
			inst.t.Fatalf("read-access: %v", err)
		}
		defer resp.Body.Close()
		var answer struct{ Token string }
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK || answer.Token != AccessAdmin {
			inst.t.Fatalf("%s=admin: read-access answered %d, token %q (%v), not the access file's %s", AccessFileEnv, resp.StatusCode, answer.Token, err, AccessAdmin)
		}
		return
	}
}
