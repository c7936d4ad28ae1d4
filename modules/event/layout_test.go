package event

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// recordKeys returns the keys of a record's JSON object in their order.
func recordKeys(t *testing.T, r Record) []string {
	t.Helper()
	var keys []string
	sc := jsonscan.New(append(bytes.Clone(r.JSON), '}'))
	if err := sc.Object(func(key string) error {
		keys = append(keys, key)
		return sc.Skip()
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestSplit(t *testing.T) {
	when := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)
	traceParent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, c := range []Candidate{
		{Source: "https://x\"\\", Subject: "/a/\u00fc<&>\u2028", Type: "io.example.thing", Data: []byte(`{"k":"\u003c\"}"}`)},
		{Source: "https://x?a=1&b=2", Subject: "/a/b", Type: "io.example.thing", Data: []byte(`{}`), TraceParent: traceParent},
		{Source: "https://x", Subject: "/", Type: "io.example.thing", Data: []byte(`{"hash":"x"}`), TraceParent: traceParent, TraceState: "k=v"},
		{Source: "https://x", Subject: "/", Type: "io.example.thing", Data: []byte(`{"a":[1,{"b":null}]}`), TraceState: "k=v"},
	} {
		_, r := Seal(nil, c, 12, when, []byte(ZeroHash))
		m, err := r.Split(jsonscan.New(nil))
		if err != nil {
			t.Fatalf("%s: %v", r.JSON, err)
		}
		// The members Split finds are the record's keys, in Member order.
		var present []string
		for member := range Member(NumMembers) {
			if m[member] != nil {
				present = append(present, member.Name())
			} else if !member.Optional() {
				t.Errorf("%s: no %s", r.JSON, member.Name())
			}
		}
		if got, want := strings.Join(present, ","), strings.Join(recordKeys(t, r), ","); got != want {
			t.Errorf("members %s, record keys %s", got, want)
		}
		f, err := Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		for member, want := range map[Member]string{
			MemberSource: f.Source, MemberSubject: f.Subject, MemberType: f.Type, MemberSpecVersion: SpecVersion,
			MemberID: "12", MemberTime: FormatTime(when), MemberDataContentType: DataContentType,
			MemberPredecessorHash: ZeroHash, MemberHash: r.Hash(),
		} {
			if got := string(m[member]); got != string(jsonscan.AppendString(nil, want)) {
				t.Errorf("%s = %s, want %q", member.Name(), got, want)
			}
		}
		if subject, eventType, err := r.SubjectAndType(jsonscan.New(nil)); err != nil || subject != c.Subject || eventType != c.Type {
			t.Errorf("SubjectAndType of %s: %q %q %v", r.JSON, subject, eventType, err)
		}
		if string(m[MemberData]) != string(c.Data) || f.Source != c.Source || f.TraceParent != c.TraceParent || f.TraceState != c.TraceState {
			t.Errorf("data %s, fields %+v", m[MemberData], f)
		}
		if named, ok := MemberNamed("predecessorhash"); !ok || named != MemberPredecessorHash {
			t.Errorf("MemberNamed(predecessorhash) = %d, %v", named, ok)
		}
		if _, ok := MemberNamed("signature"); ok {
			t.Error("MemberNamed knows signature, which is not stored")
		}
	}
}

// TestSplitDamaged feeds Split every prefix of a record and the record
// with one byte changed: it must not panic, a prefix must fail, and a
// changed record must fail to decode or to verify. (The hash does not
// cover traceparent and tracestate, so the record has neither.)
func TestSplitDamaged(t *testing.T) {
	c := Candidate{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"k":[1,2]}`)}
	_, r := Seal(nil, c, 3, time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), []byte(ZeroHash))
	sc := jsonscan.New(nil)
	for n := range len(r.JSON) {
		if _, err := (Record{ID: 3, JSON: r.JSON[:n]}).Split(sc); err == nil {
			t.Errorf("Split accepted the prefix %s", r.JSON[:n])
		}
		if _, _, err := (Record{ID: 3, JSON: r.JSON[:n]}).SubjectAndType(sc); err == nil && n < strings.Index(string(r.JSON), `,"specversion"`) {
			t.Errorf("SubjectAndType accepted the prefix %s", r.JSON[:n])
		}
	}
	for i := range r.JSON {
		for _, b := range []byte{'"', '\\', ',', 'x', 0} {
			if r.JSON[i] == b {
				continue
			}
			damaged := bytes.Clone(r.JSON)
			damaged[i] = b
			_, _ = Record{ID: 3, JSON: damaged}.Split(sc)
			_, _, _ = Record{ID: 3, JSON: damaged}.SubjectAndType(sc)
			if f, err := Decode(Record{ID: 3, JSON: damaged}); err == nil && f.Verify() == nil {
				t.Errorf("a record damaged at %d decodes and verifies: %s", i, damaged)
			}
		}
	}
	for _, bad := range []string{`{"data":1}`, `{"source":1,"subject":"/a"`} {
		if _, err := Decode(Record{JSON: []byte(bad)}); err == nil {
			t.Errorf("Decode accepted %s", bad)
		}
	}
}

func TestDecodeRejectsBadData(t *testing.T) {
	c := Candidate{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"k":`)}
	_, r := Seal(nil, c, 0, time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), []byte(ZeroHash))
	if _, err := r.Split(jsonscan.New(nil)); err != nil {
		t.Fatalf("Split scans data: %v", err)
	}
	if _, err := Decode(r); err == nil {
		t.Fatal("Decode accepted data that is not JSON")
	}
}
