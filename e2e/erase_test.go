package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// eraseAnswer is the answer of erase-events.
type eraseAnswer struct {
	Erased int             `json:"erased"`
	Event  json.RawMessage `json:"event"`
}

// erase posts body to erase-events and returns the answer, failing unless
// it is 200.
func erase(t *testing.T, inst harness.Target, body string) (eraseAnswer, storedEvent) {
	t.Helper()
	r := inst.Do("POST", "/api/v1/erase-events", harness.Token, body)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("erase-events %s: %d %s", body, r.StatusCode, r.Body)
	}
	var a eraseAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatalf("erase-events answer %s: %v", r.Body, err)
	}
	if string(a.Event) == "null" {
		return a, storedEvent{}
	}
	return a, parseEvent(t, a.Event)
}

// letterMarker returns a marker of letters that no event holds otherwise
// (no hex digit, no T or Z of a time): compression keeps the first copy in
// each block of a file as it is, so a search of the files finds it.
func letterMarker() string {
	const letters = "GHJKLMNPQRSUVWXY"
	b := make([]byte, 20)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// personalEvents writes n events of a customer, each with the marker in
// its data, on subject and its orders.
func personalEvents(t *testing.T, inst harness.Target, subject, marker string, from, n int) {
	t.Helper()
	var parts []string
	for i := from; i < from+n; i++ {
		parts = append(parts,
			fmt.Sprintf(`{"source":"https://shop.example","subject":%q,"type":"io.example.registered","data":{"email":"%s-%d@example.com","id":"%d"}}`, subject, marker, i, i),
			fmt.Sprintf(`{"source":"https://shop.example","subject":"%s/orders/%d","type":"io.example.ordered","data":{"address":"%s street %d"}}`, subject, i%3, marker, i))
	}
	mustWrite(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
}

// checkErased checks that every read of inst (read-events, EventQL,
// observe, a subscription) shows the erased form of the 700 events of
// TestErase's customer (the hash stays the original one), and that EventQL
// finds no erased value.
func checkErased(t *testing.T, inst harness.Target, marker string) {
	t.Helper()
	erased := 0
	for _, l := range stream(t, inst, "/api/v1/read-events", `{"subject":"/customers/42","options":{"recursive":true}}`) {
		e := parseEvent(t, l.Payload)
		if e.Type == "io.eventstore.events-erased" {
			continue
		}
		var form struct {
			Erased struct{ At, By string } `json:"$erased"`
		}
		if err := json.Unmarshal(e.Data, &form); err != nil || form.Erased.By == "" || !strings.HasPrefix(string(e.Data), `{"$erased":{"at":"`) {
			t.Fatalf("event %s reads %s", e.ID, e.Data)
		}
		erased++
	}
	if erased != 700 {
		t.Fatalf("%d erased events read, want 700", erased)
	}
	res := runQuery(t, inst, `FROM e IN events WHERE e.type == "io.example.registered" AND e.data.email == "`+marker+`-5@example.com" PROJECT INTO e`)
	if res.status != 200 || len(res.rows) != 0 {
		t.Fatalf("a query of an erased value: %+v", res)
	}
	res = runQuery(t, inst, `FROM e IN events WHERE e.subject == "/customers/42" AND e.type == "io.example.registered" PROJECT INTO e.data`)
	if res.status != 200 || len(res.rows) != 350 {
		t.Fatalf("a query of the erased events: %d rows, %s", len(res.rows), res.err)
	}
	if row, _ := json.Marshal(res.rows[0]); !strings.HasPrefix(string(row), `{"$erased":{"at":"`) {
		t.Fatalf("EventQL sees %s", row)
	}

	// An observer that replays the subject, and the consumer of a new
	// subscription of it, receive the erased form too.
	isErased := func(event []byte) bool {
		return strings.Contains(string(event), `"data":{"$erased":{"at":"`) && !strings.Contains(string(event), marker)
	}
	lines := liveLines(t, inst.Nodes()[0], "/api/v1/observe-events", harness.Token, `{"subject":"/customers/42","options":{"recursive":true}}`)
	for observed, timeout := 0, time.After(30*time.Second); observed < 700; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the observer's stream ended after %d events", observed)
			}
			if !strings.Contains(line, `"type":"event"`) || strings.Contains(line, `io.eventstore.events-erased`) {
				continue
			}
			if !isErased([]byte(line)) {
				t.Fatalf("an observer receives %s", line)
			}
			observed++
		case <-timeout:
			t.Fatalf("an observer received %d erased events, want 700", observed)
		}
	}
	name := "erased-" + letterMarker()
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"`+name+`","subject":"/customers/42",
		"options":{"recursive":true,"eventTypes":["io.example.registered","io.example.ordered"],"maxInFlight":1000}}`); r.StatusCode != 200 {
		t.Fatalf("create-subscription: %d %s", r.StatusCode, r.Body)
	}
	c := consume(t, inst, name, "checker")
	defer c.cancel()
	for _, d := range c.deliveries(t, 700) {
		if !isErased(d.Event) {
			t.Fatalf("a consumer receives %s", d.Event)
		}
	}
}

// TestErase erases a customer's events in a store on disk: the answer, the
// erased form in every read, the management event, the bytes gone from
// every file of the data directory (the WAL included) once the answer is
// sent and after kill -9 and a restart, verification, a backup → restore →
// backup round trip, the errors and the grant.
func TestErase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	marker := letterMarker()
	if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"email","path":"/email"}`); r.StatusCode != 200 {
		t.Fatalf("register-data-index: %d %s", r.StatusCode, r.Body)
	}
	for i := 0; i < 300; i += 100 {
		personalEvents(t, inst, "/customers/42", marker, i, 100)
		mustWrite(t, inst, candidates("/customers/7", "io.example.registered", "/customers/8", "io.example.registered"))
	}
	// A restart moves the records into tables and blob files; more go to
	// the memtable and the WAL.
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	inst = harness.Start(t, bin, args...)
	personalEvents(t, inst, "/customers/42", marker, 300, 50)
	if files := storetest.FilesHolding(t, dir, marker); !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".blob") }) {
		t.Fatalf("the marker is in no blob file before the erasure, only in %v", files)
	}

	checkError(t, inst.Do("POST", "/api/v1/erase-events", harness.Token, `{"subject":"/customers/42"}`), 400, "invalid request: reason is required")
	checkError(t, inst.Do("POST", "/api/v1/erase-events", harness.Token, `{"subject":"customers","reason":"x"}`), 400, "invalid subject: 'customers'")
	checkError(t, inst.Do("POST", "/api/v1/erase-events", harness.Token, `{"subject":"/customers/42","eventTypes":["x"],"reason":"x"}`), 400, "invalid event type: 'x'")
	checkError(t, inst.Do("POST", "/api/v1/erase-events", harness.Token, `{"subject":"/customers/42","upperBound":"99999","reason":"x"}`), 404, "event '99999' not found")
	checkError(t, inst.Do("POST", "/api/v1/erase-events", harness.Token, `{"subject":"/customers/42","reason":"`+strings.Repeat("r", 1001)+`"}`), 400,
		"invalid request: reason must be at most 1000 characters")

	// The orders up to event 199 first, by type and upper bound; then the rest.
	first, mgmt := erase(t, inst, `{"subject":"/customers/42","recursive":true,"eventTypes":["io.example.ordered"],"upperBound":"199","reason":"orders first"}`)
	if first.Erased != 100 || mgmt.Type != "io.eventstore.events-erased" || mgmt.Subject != "/customers/42" || mgmt.Source != "urn:eventstore:management" {
		t.Fatalf("first erasure: %d, %s", first.Erased, mgmt.raw)
	}
	token := "null"
	if harness.AccessFileMode() {
		token = `"` + harness.AccessAdmin + `"`
	}
	if want := `{"eventTypes":["io.example.ordered"],"events":100,"firstId":"1","lastId":"199","reason":"orders first","recursive":true,"token":` + token + `,"upperBound":"199"}`; string(mgmt.Data) != want {
		t.Fatalf("management event data %s, want %s", mgmt.Data, want)
	}
	rest, mgmt := erase(t, inst, `{"subject":"/customers/42","recursive":true,"reason":"request of the data subject"}`)
	if rest.Erased != 600 {
		t.Fatalf("second erasure erased %d, want 600", rest.Erased)
	}
	if files := storetest.FilesHolding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are still in %v once the answer is sent", files)
	}
	var diagnostics struct {
		Storage struct {
			Engine struct {
				ErasedEvents int `json:"erasedEvents"`
			} `json:"engine"`
		} `json:"storage"`
	}
	if r := inst.Do("GET", "/api/v1/diagnostics", harness.Token, ""); json.Unmarshal(r.Body, &diagnostics) != nil || diagnostics.Storage.Engine.ErasedEvents != 700 {
		t.Fatalf("diagnostics: %d %s", r.StatusCode, r.Body)
	}
	if got := metrics(t, inst)["eventstore_events_erased_total"]; got != 700 {
		t.Fatalf("eventstore_events_erased_total %v", got)
	}
	again, _ := erase(t, inst, `{"subject":"/customers/42","recursive":true,"reason":"again"}`)
	if again.Erased != 0 || string(again.Event) != "null" {
		t.Fatalf("an erasure of erased events: %+v", again)
	}

	checkErased(t, inst, marker)
	verified := stream(t, inst, "/api/v1/verify-store", `{}`)
	if last := verified[len(verified)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
		t.Fatalf("verify-store after the erasure: %s %s", last.Type, last.Payload)
	}

	// A backup carries dataHash on the erased lines only; a restore of it
	// verifies, and backs up to the same bytes.
	file := runBackup(t, inst)
	raw, _ := os.ReadFile(file)
	withDigest := strings.Count(string(raw), `,"dataHash":"`)
	if withDigest != 700 || strings.Contains(string(raw), marker) {
		t.Fatalf("the backup has %d lines with dataHash", withDigest)
	}
	// Restored on Pebble and on PostgreSQL (which keeps the digests too),
	// the store reads the erased form, verifies and backs up to the same
	// bytes.
	restoredOn := func(t *testing.T, target *harness.Instance) {
		t.Helper()
		body, _ := os.Open(file)
		defer body.Close()
		if r := target.DoReader("POST", "/api/v1/restore", harness.Token, body); r.StatusCode != 200 {
			t.Fatalf("restore: %d %s", r.StatusCode, r.Body)
		}
		checkErased(t, target, marker)
		if again, _ := os.ReadFile(runBackup(t, target)); !bytes.Equal(again, raw) {
			t.Fatal("the backup of the restored store differs from the backup it was restored from")
		}
		verified := stream(t, target, "/api/v1/verify-store", `{}`)
		if last := verified[len(verified)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
			t.Fatalf("verify-store after the restore: %s %s", last.Type, last.Payload)
		}
	}
	restoredOn(t, harness.Start(t, bin, harness.Dev()...))
	restoredOn(t, startPostgres(t, 1).Nodes()[0])

	// kill -9 right after an answer, a restart: still gone, still verifies.
	personalEvents(t, inst, "/customers/99", marker+"V", 0, 20)
	tokenFile := harness.WriteFile(t, t.TempDir(), "token", harness.Token)
	code, stdout, stderr := harness.Run(t, bin, time.Minute, "erase", "--url", inst.URL("http"), "--token-file", tokenFile,
		"--subject", "/customers/99", "--recursive", "--reason", "late")
	if code != 0 || !strings.HasPrefix(stdout, "eventstore: erased 40 events of /customers/99 (ids 708 to 747), recorded by event 748 at ") {
		t.Fatalf("eventstore erase: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if code, _, stderr := harness.Run(t, bin, time.Minute, "erase", "--url", inst.URL("http"), "--token-file", tokenFile, "--subject", "/customers/99"); code != 2 || !strings.Contains(stderr, "--reason is required") {
		t.Fatalf("eventstore erase without a reason: exit %d, %s", code, stderr)
	}
	inst.Signal(syscall.SIGKILL)
	inst.Wait(10 * time.Second)
	if files := storetest.FilesHolding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v after kill -9", files)
	}
	inst = harness.Start(t, bin, args...)
	checkErased(t, inst, marker)
	if files := storetest.FilesHolding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v after the restart", files)
	}
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	verifyClean(t, 749, "--data-directory="+dir)
}

// TestEraseGrant: only a token with the admin grant erases.
func TestEraseGrant(t *testing.T) {
	inst := startWithAccessFile(t)
	body := `{"subject":"/orders/1","reason":"x"}`
	for _, name := range []string{"reader", "writer", "schemas", "operator"} {
		if code := statusOf(t, inst, "POST", "/api/v1/erase-events", accessToken(name), body); code != 403 {
			t.Errorf("token %s: %d, want 403", name, code)
		}
	}
	if code := statusOf(t, inst, "POST", "/api/v1/erase-events", accessToken("admin"), body); code != 200 {
		t.Errorf("token admin: %d, want 200", code)
	}
}

// TestEraseKilled kills the service with SIGKILL while it erases: before
// the commit, as soon as an observer sees the management event (between
// the commit and the answer, while the old bytes are purged), and after
// the answer. After a restart the erasure is there whole, with its
// management event and the erased bytes in no file, or not at all.
func TestEraseKilled(t *testing.T) {
	for _, when := range []string{"at once", "on commit", "after the answer"} {
		dir := filepath.Join(t.TempDir(), "data")
		args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
		inst := harness.Start(t, bin, args...)
		marker := letterMarker()
		for from := 0; from < 2_000; from += 500 {
			personalEvents(t, inst, "/customers/42", marker, from, 500)
			mustWrite(t, inst, candidates("/customers/7", "io.example.registered"))
		}
		// A restart moves the records into tables and blob files.
		inst.Signal(syscall.SIGTERM)
		if code := inst.Wait(30 * time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		inst = harness.Start(t, bin, args...)
		// The first event the observer sees is the management event.
		live := liveLines(t, inst, "/api/v1/observe-events", harness.Token,
			`{"subject":"/customers/42","options":{"recursive":true,"lowerBound":{"id":"4004","type":"inclusive"}}}`)
		answered := make(chan int, 1) // the status, 0 for no answer
		go func() {
			req, _ := http.NewRequest("POST", inst.URL("http")+"/api/v1/erase-events", strings.NewReader(`{"subject":"/customers/42","recursive":true,"reason":"killed"}`))
			req.Header.Set("Authorization", "Bearer "+harness.Token)
			resp, err := inst.Client.Do(req)
			if err != nil {
				answered <- 0
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
		status := -1
		switch when {
		case "on commit":
			for line := range live {
				if strings.Contains(line, `"type":"io.eventstore.events-erased"`) {
					break
				}
			}
		case "after the answer":
			status = <-answered
		}
		inst.Signal(syscall.SIGKILL)
		inst.Wait(10 * time.Second)
		if status == -1 {
			status = <-answered
		}

		inst = harness.Start(t, bin, args...)
		erased, mgmt := 0, 0
		for _, l := range stream(t, inst, "/api/v1/read-events", `{"subject":"/customers/42","options":{"recursive":true}}`) {
			e := parseEvent(t, l.Payload)
			switch {
			case e.Type == "io.eventstore.events-erased":
				mgmt++
			case strings.HasPrefix(string(e.Data), `{"$erased":`):
				erased++
			}
		}
		switch {
		case erased == 4_000 && mgmt == 1:
			if files := storetest.FilesHolding(t, dir, marker); len(files) > 0 {
				t.Fatalf("killed %s: the erasure is committed, and its bytes are in %v after the restart", when, files)
			}
		case erased == 0 && mgmt == 0:
			if status == 200 || when != "at once" {
				t.Fatalf("killed %s: answered %d, and nothing is erased after kill -9", when, status)
			}
		default:
			t.Fatalf("killed %s: %d events erased, %d management events after kill -9", when, erased, mgmt)
		}
		t.Logf("killed %s: answered %d, %d erased", when, status, erased)
		inst.Signal(syscall.SIGTERM)
		if code := inst.Wait(30 * time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		verifyClean(t, 4_000+4+mgmt, "--data-directory="+dir)
	}
}

// TestErasePostgres erases a customer's events on three PostgreSQL nodes:
// every node reads the erased form, the bytes are in no table, TOAST or
// index file of the database once the answer is sent (PostgreSQL's WAL is
// the database's own history, not searched), also after a checkpoint; the
// store verifies and backs up with the digests; an erasure cut off by
// kill -9 between its commit and its answer leaves a purge that the next
// node to start does, and an erasure asked again answers once it is done.
func TestErasePostgres(t *testing.T) {
	url := pg.Database(t)
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url)...)
	nodes := cluster.Nodes()
	base := filepath.Join(pg.Cluster(t).DataDir(), "base")
	checkpoint := func() {
		t.Helper()
		if err := pg.Cluster(t).Exec(context.Background(), databaseOf(t, url), "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
	}
	marker := letterMarker()
	if r := nodes[0].Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"email","path":"/email"}`); r.StatusCode != 200 {
		t.Fatalf("register-data-index: %d %s", r.StatusCode, r.Body)
	}
	for i := 0; i < 350; i += 50 {
		personalEvents(t, nodes[i/50%3], "/customers/42", marker, i, 50)
		mustWrite(t, nodes[(i/50+1)%3], candidates("/customers/7", "io.example.registered"))
	}
	// Every node has the records in its window of recent events now.
	for _, node := range nodes {
		stream(t, node, "/api/v1/read-events", `{"subject":"/customers/42","options":{"recursive":true}}`)
	}
	checkpoint()
	if files := storetest.FilesHolding(t, base, marker); len(files) == 0 {
		t.Fatal("the marker is in no file of the database before the erasure")
	}

	first, _ := erase(t, nodes[0], `{"subject":"/customers/42","recursive":true,"eventTypes":["io.example.ordered"],"upperBound":"199","reason":"orders first"}`)
	if first.Erased != 99 { // the orders of ids 1 to 99 and 102 to 198
		t.Fatalf("first erasure erased %d, want 99", first.Erased)
	}
	checkpoint()
	if files := storetest.FilesHolding(t, base, marker+"-5@"); len(files) == 0 {
		t.Fatal("the e-mail addresses the first erasure kept are in no file of the rewritten tables")
	}
	rest, _ := erase(t, nodes[1], `{"subject":"/customers/42","recursive":true,"reason":"request of the data subject"}`)
	if rest.Erased != 601 {
		t.Fatalf("second erasure erased %d, want 601", rest.Erased)
	}
	if files := storetest.FilesHolding(t, base, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are still in %v once the answer is sent", files)
	}
	checkpoint()
	if files := storetest.FilesHolding(t, base, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v after a checkpoint", files)
	}
	for _, node := range nodes {
		checkErased(t, node, marker)
	}
	if got := metrics(t, nodes[1])["eventstore_events_erased_total"]; got != 601 {
		t.Fatalf("eventstore_events_erased_total of the second node %v", got)
	}
	verified := stream(t, nodes[2], "/api/v1/verify-store", `{}`)
	if last := verified[len(verified)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
		t.Fatalf("verify-store after the erasure: %s %s", last.Type, last.Payload)
	}
	raw, _ := os.ReadFile(runBackup(t, nodes[2]))
	if n := strings.Count(string(raw), `,"dataHash":"`); n != 700 || strings.Contains(string(raw), marker) {
		t.Fatalf("the backup has %d lines with dataHash", n)
	}

	// kill -9 as soon as another node sees the management event: the
	// purge may be cut off. A node that starts does it; an erasure asked
	// again answers once it is done.
	personalEvents(t, nodes[0], "/customers/99", marker+"V", 0, 200)
	checkpoint()
	live := liveLines(t, nodes[2], "/api/v1/observe-events", harness.Token, `{"subject":"/customers/99","options":{"recursive":true,"lowerBound":{"id":"1104","type":"inclusive"}}}`)
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", nodes[0].URL("http")+"/api/v1/erase-events", strings.NewReader(`{"subject":"/customers/99","recursive":true,"reason":"killed"}`))
		req.Header.Set("Authorization", "Bearer "+harness.Token)
		resp, err := nodes[0].Client.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	for line := range live {
		if strings.Contains(line, `"type":"io.eventstore.events-erased"`) {
			break
		}
	}
	nodes[0].Signal(syscall.SIGKILL)
	nodes[0].Wait(10 * time.Second)
	t.Logf("the killed erasure answered %d", <-answered)
	cluster.Replace(0)
	again, _ := erase(t, nodes[1], `{"subject":"/customers/99","recursive":true,"reason":"again"}`)
	if again.Erased != 0 {
		t.Fatalf("the erasure asked again erased %d", again.Erased)
	}
	checkpoint()
	if files := storetest.FilesHolding(t, base, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v after the erasure was cut off and asked again", files)
	}
	if code, out, errOut := harness.Run(t, bin, time.Minute, "verify", "--postgres-url", url); code != 0 {
		t.Fatalf("eventstore verify: exit %d\n%s\n%s", code, out, errOut)
	}
}

// databaseOf returns the name of the database of a PostgreSQL URL.
func databaseOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}
