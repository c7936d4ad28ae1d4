package event

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// decodeAndVerify is what Checker.Check stands for: Decode, then Verify.
func decodeAndVerify(r Record) (Fields, error) {
	f, err := Decode(r)
	if err == nil {
		err = f.Verify()
	}
	return f, err
}

// TestCheckerIsDecodeAndVerify holds Check to Decode followed by Verify:
// the same values for intact records (escapes, non-ASCII, trace fields),
// and the same error for every record damaged at any byte.
func TestCheckerIsDecodeAndVerify(t *testing.T) {
	c := NewChecker()
	at := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)
	for i, cand := range []Candidate{
		{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"k":[1,2]}`)},
		{Source: "https://x/<&>", Subject: "/bücher/\"42\"", Type: "io.example.thing", Data: []byte(`{"k":"\u003c"}`),
			TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", TraceState: "a=b"},
	} {
		_, r := Seal(nil, cand, uint64(i), at, []byte(ZeroHash))
		v, err := c.Check(r)
		f, _ := decodeAndVerify(r)
		if err != nil {
			t.Fatalf("Check of an intact record: %v", err)
		}
		for member, want := range map[Member]string{MemberSource: f.Source, MemberSubject: f.Subject, MemberType: f.Type,
			MemberTraceParent: f.TraceParent, MemberTraceState: f.TraceState, MemberID: f.ID, MemberTime: f.Time,
			MemberPredecessorHash: f.PredecessorHash, MemberData: string(f.Data), MemberHash: f.Hash} {
			if string(v[member]) != want {
				t.Errorf("%s = %q, Decode says %q", member.Name(), v[member], want)
			}
		}
		for at := range r.JSON {
			for _, b := range []byte{'"', '\\', ',', 'x', '1', 0, 0xff} {
				damaged := bytes.Clone(r.JSON)
				damaged[at] = b
				_, want := decodeAndVerify(Record{ID: r.ID, JSON: damaged})
				if _, err := c.Check(Record{ID: r.ID, JSON: damaged}); fmt.Sprint(err) != fmt.Sprint(want) {
					t.Fatalf("damaged at %d: Check says %v, Decode and Verify %v", at, err, want)
				}
			}
		}
		if _, err := c.Check(Record{ID: r.ID + 1, JSON: r.JSON}); err == nil {
			t.Error("Check accepted a record under the wrong id")
		}
	}
}

// TestCheckerReusesItsBuffers: checking records one after the other
// allocates nothing.
func TestCheckerReusesItsBuffers(t *testing.T) {
	_, r := Seal(nil, Candidate{Source: "https://x", Subject: "/a/\u00fc", Type: "io.example.thing", Data: []byte(`{"k":[1,2],"s":"x"}`)},
		7, time.Now(), []byte(ZeroHash))
	c := NewChecker()
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Check(r); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("Check allocates %.0f times per record", allocs)
	}
}
