package event

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// TestErase: an erased record keeps every member but data and its hash,
// and verifies with the kept digest of its data, not without it.
func TestErase(t *testing.T) {
	data := []byte(`{"email":"marker-7f3a@example.com"}`)
	c := Candidate{Source: "https://example.com", Subject: "/customers/42", Type: "com.example.registered", Data: data, TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	_, r := Seal(nil, c, 7, time.Date(2026, 11, 29, 10, 0, 0, 1, time.UTC), []byte(ZeroHash))
	erasedData := ErasedData(9, "2026-11-29T11:00:00.000000001Z")
	if string(erasedData) != `{"$erased":{"at":"2026-11-29T11:00:00.000000001Z","by":"9"}}` || !IsErased(erasedData) || IsErased(data) {
		t.Fatalf("erased form %s", erasedData)
	}
	erased, kept, err := Erase(r, erasedData, jsonscan.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	if kept != sha256.Sum256(data) {
		t.Error("the kept digest is not the data's")
	}
	if strings.Contains(string(erased.JSON), "marker-7f3a") {
		t.Fatalf("erased record still holds the data: %s", erased.JSON)
	}
	want := strings.Replace(string(r.JSON), string(data), string(erasedData), 1)
	if string(erased.JSON) != want || erased.ID != 7 || erased.Hash() != r.Hash() {
		t.Fatalf("erased record\n got %s\nwant %s", erased.JSON, want)
	}
	checker := NewChecker()
	if _, err := checker.Check(erased); err == nil {
		t.Error("an erased record verified without the kept digest")
	}
	v, err := checker.CheckErased(erased, kept)
	if err != nil || string(v[MemberData]) != string(erasedData) {
		t.Fatalf("CheckErased: %v, data %s", err, v[MemberData])
	}
	if _, err := checker.CheckErased(erased, sha256.Sum256([]byte(`{}`))); err == nil {
		t.Error("an erased record verified with a wrong digest")
	}
	if !IsErasedForm(erasedData) || IsErasedForm(data) || IsErasedForm([]byte(`{"$erased":{"at":"2026-11-29T11:00:00.000000001Z","by":"9"},"email":"x"}`)) ||
		IsErasedForm([]byte(`{"$erased":{"at":"2026-11-29T11:00:00.000000001Z","by":"9x"}}`)) {
		t.Error("IsErasedForm")
	}
	if canonical, err := jsonscan.Canonicalize(erasedData); err != nil || string(canonical) != string(erasedData) {
		t.Errorf("the erased form is not canonical: %s", canonical)
	}
	_, resealed := SealKept(nil, Candidate{Source: c.Source, Subject: c.Subject, Type: c.Type, Data: erasedData, TraceParent: c.TraceParent}, 7,
		time.Date(2026, 11, 29, 10, 0, 0, 1, time.UTC), []byte(ZeroHash), kept)
	if string(resealed.JSON) != string(erased.JSON) {
		t.Errorf("SealKept\n got %s\nwant %s", resealed.JSON, erased.JSON)
	}
	f, err := Decode(erased)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.VerifyErased(kept); err != nil {
		t.Error(err)
	}
	if f.Verify() == nil {
		t.Error("Fields.Verify accepted an erased event")
	}
}
