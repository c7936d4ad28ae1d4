package event

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// The worked example of docs/api.md §2.7.
const (
	exampleInput     = `{"title": "2001 <A Space Odyssey>", "year": 1968, "rating": 4.50, "isbn": "978-0-451-45799-8", "views": 12345678901234567890, "ratio": 1e3}`
	exampleCanonical = `{"isbn":"978-0-451-45799-8","rating":4.5,"ratio":1000,"title":"2001 \u003cA Space Odyssey\u003e","views":12345678901234567890,"year":1968}`
	exampleEvent0    = `{"source":"https://library.example.com","subject":"/books/42","type":"com.example.library.book-acquired","specversion":"1.0","id":"0","time":"2026-11-22T10:15:30.123456789Z","datacontenttype":"application/json","predecessorhash":"0000000000000000000000000000000000000000000000000000000000000000","data":{"isbn":"978-0-451-45799-8","rating":4.5,"ratio":1000,"title":"2001 \u003cA Space Odyssey\u003e","views":12345678901234567890,"year":1968},"hash":"d024dbe8fafc3dfacf23abed6b3dae1962f75078f5cf42743584d996ea1f049b","signature":null}`
	exampleHash1     = "4ed76d0fe24efa79daa4f958590db11d8b5baed384c0517f2fa63193f2069c32"
	exampleSig0      = "esdb:signature:v1:2bbe52bb0a2de627c9b2efc7d04765441aa33318789e51ad6ed8d6de2e5d77bc8af62ad79ee3ba4ffe7f4664a2ae150861907d0eb2eb27364bd1117b16cc330b"
	examplePublic    = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
)

func testKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func TestWorkedExample(t *testing.T) {
	data, err := jsonscan.Canonicalize([]byte(exampleInput))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != exampleCanonical || len(data) != 138 {
		t.Fatalf("canonical data (%d bytes):\n got %s\nwant %s", len(data), data, exampleCanonical)
	}
	if got := hex.EncodeToString(sha256Sum(data)); got != "6bd35ecdba39554187e5ac9a2858a15d1cf2fa31c6a6fdaba62a733a48d4568a" {
		t.Fatalf("h_data %s", got)
	}

	clock := time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC)
	t0 := NextTime(clock, time.Time{})
	c0 := Candidate{Source: "https://library.example.com", Subject: "/books/42", Type: "com.example.library.book-acquired", Data: data}
	_, r0 := Seal(nil, c0, 0, t0, []byte(ZeroHash))
	if got := string(NewEmitter(nil).Append(nil, r0)); got != exampleEvent0 {
		t.Fatalf("event 0:\n got %s\nwant %s", got, exampleEvent0)
	}
	if r0.Hash() != "d024dbe8fafc3dfacf23abed6b3dae1962f75078f5cf42743584d996ea1f049b" {
		t.Fatalf("hash 0: %s", r0.Hash())
	}

	// Event 1: the same clock reading is bumped to ...790 ns, then nudged to ...791 ns.
	t1 := NextTime(clock, t0)
	if FormatTime(t1) != "2026-11-22T10:15:30.123456791Z" {
		t.Fatalf("time 1: %s", FormatTime(t1))
	}
	c1 := Candidate{Source: c0.Source, Subject: "/books/42", Type: "com.example.library.book-borrowed", Data: []byte(`{"reader":"jane"}`)}
	_, r1 := Seal(nil, c1, 1, t1, r0.HashBytes())
	if r1.Hash() != exampleHash1 {
		t.Fatalf("hash 1: %s", r1.Hash())
	}

	signed := string(NewEmitter(testKey()).Append(nil, r0))
	if !strings.HasSuffix(signed, `,"signature":"`+exampleSig0+`"}`) {
		t.Fatalf("signature of event 0: %s", signed)
	}
	public, _ := hex.DecodeString(examplePublic)
	if !Verify(public, r0.Hash(), exampleSig0) || Verify(public, r1.Hash(), exampleSig0) {
		t.Fatal("signature verification disagrees with the test vector")
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func TestTraceFieldsAndEscaping(t *testing.T) {
	c := Candidate{
		Source: "tag:example.com,2026:<&>", Subject: "/a", Type: "io.example.thing",
		Data: []byte(`{}`), TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", TraceState: "k=v",
	}
	_, r := Seal([]byte("prefix"), c, 7, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), []byte(ZeroHash))
	var decoded map[string]any
	full := NewEmitter(nil).Append(nil, r)
	if err := json.Unmarshal(full, &decoded); err != nil {
		t.Fatalf("%v: %s", err, full)
	}
	if decoded["source"] != c.Source || decoded["traceparent"] != c.TraceParent || decoded["tracestate"] != "k=v" || decoded["id"] != "7" {
		t.Fatalf("decoded %v", decoded)
	}
	if !strings.Contains(string(full), `"source":"tag:example.com,2026:\u003c\u0026\u003e","subject":"/a","type":"io.example.thing","traceparent":"00-`) {
		t.Fatalf("key order or escaping: %s", full)
	}
	if want := Hash("7", ZeroHash, "2026-01-02T03:04:05.000000006Z", c.Source, c.Subject, c.Type, c.Data); r.Hash() != want {
		t.Fatalf("hash %s, want %s (trace fields must not be hashed)", r.Hash(), want)
	}
}

func TestNextTime(t *testing.T) {
	last := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	cases := []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 1, 1, 0, 0, 1, 123, time.UTC), "2026-01-01T00:00:01.000000123Z"},
		{time.Date(2026, 1, 1, 0, 0, 1, 120, time.UTC), "2026-01-01T00:00:01.000000121Z"},
		{last, "2026-01-01T00:00:00.000000006Z"},                                        // same reading: strictly later
		{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01-01T00:00:00.000000006Z"}, // clock went back
	}
	for _, tc := range cases {
		if got := FormatTime(NextTime(tc.now, last)); got != tc.want {
			t.Errorf("NextTime(%v) = %s, want %s", tc.now, got, tc.want)
		}
	}
	if got := FormatTime(NextTime(time.Date(2026, 1, 1, 0, 0, 0, 9, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 9, time.UTC))); got != "2026-01-01T00:00:00.000000011Z" {
		t.Errorf("after ...009 comes ...011, got %s", got)
	}
}

func TestFormatTime(t *testing.T) {
	cases := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC), "2026-11-22T10:15:30.123456789Z"},
		{time.Date(2026, 11, 22, 10, 15, 30, 123456790, time.UTC), "2026-11-22T10:15:30.123456791Z"},
		{time.Date(2026, 11, 22, 10, 15, 30, 0, time.UTC), "2026-11-22T10:15:30.000000001Z"},
		{time.Date(2026, 11, 22, 11, 15, 30, 5, time.FixedZone("CET", 3600)), "2026-11-22T10:15:30.000000005Z"},
	}
	for _, tc := range cases {
		if got := FormatTime(tc.in); got != tc.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValidation(t *testing.T) {
	check := func(name string, f func(string) bool, valid, invalid []string) {
		for _, v := range valid {
			if !f(v) {
				t.Errorf("%s(%q) = false, want true", name, v)
			}
		}
		for _, v := range invalid {
			if f(v) {
				t.Errorf("%s(%q) = true, want false", name, v)
			}
		}
	}
	check("ValidSubject", ValidSubject,
		[]string{"/", "/books/42", "/users/logged-in", "/a_b/C-9", "/" + strings.Repeat("a", 1023)},
		[]string{"", "test", "/a/", "//a", "/a b", "/a//b", "/ä", "/" + strings.Repeat("a", 1024)})
	check("ValidType", ValidType,
		[]string{"io.eventsourcingdb.test", "com.foo.bar", "io.thenativeweb.user.janeDoe.loggedIn"},
		[]string{"", "io.eventsourcingdb.test.", "a.b.c", "io.test", "io..test.x", "io.test x.y", strings.Repeat("ab.", 342) + "cd"})
	check("ValidSource", ValidSource,
		[]string{"https://www.eventsourcingdb.io", "https://x", "tag:thenativeweb.io,2023:eventsourcingdb:test", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"},
		[]string{"my-app", "/relative", "https:", "", "https://a b", "1http://x", "https://%zz"})
	check("ValidTraceParent", ValidTraceParent,
		[]string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		[]string{"", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
			"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"})

	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"0", 0, true}, {"42", 42, true}, {"9999999999999999999", 9999999999999999999, true},
		{"hello", 0, false}, {"-1", 0, false}, {"01", 0, false}, {"", 0, false}, {"18446744073709551615", 0, false}, {"+1", 0, false}} {
		if got, ok := ParseID(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("ParseID(%q) = %d, %v", tc.in, got, ok)
		}
	}
}

func TestDecodeAndVerify(t *testing.T) {
	c := Candidate{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"k":"\u003c"}`), TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	_, r := Seal(nil, c, 3, time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), []byte(ZeroHash))
	f, err := Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if f.Subject != "/a" || string(f.Data) != `{"k":"\u003c"}` || f.TraceParent != c.TraceParent || f.ID != "3" {
		t.Fatalf("decoded %+v", f)
	}
	if err := f.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	f.Subject = "/b"
	if err := f.Verify(); err == nil {
		t.Fatal("Verify accepted a changed subject")
	}
	if _, err := Decode(Record{ID: 4, JSON: r.JSON}); err == nil {
		t.Fatal("Decode accepted a record under the wrong id")
	}
}
