package pgstore_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestKeptDigests commits an event restored erased (Written.Kept) and then
// an erasure of another (Batch.Erased): the digests are kept, the erased
// record replaces the original, its postings go, and Reset forgets the
// digests with the events.
func TestKeptDigests(t *testing.T) {
	b, err := opener(pg.Database(t))()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	keeper := b.(store.DigestKeeper)
	restored, original := event.DataSum{1, 2, 3}, event.DataSum{4, 5, 6}
	key := dataindex.Key("personal")
	storetest.Commit(t, b, store.Batch{
		Records: []store.Written{
			{Record: event.Record{ID: 0, JSON: []byte(`{"restored":"erased"}`)}, Subject: "/a", Type: "io.example.a", Kept: &restored},
			{Record: event.Record{ID: 1, JSON: []byte(`{"original":"personal"}`)}, Subject: "/a", Type: "io.example.a"},
		},
		Postings: []store.Posting{{Index: 7, Key: key, ID: 1}},
		Head:     store.Head{Count: 2, LastHash: event.ZeroHash, Commits: 1},
	})
	if sum, found, err := keeper.KeptDataSum(0); err != nil || !found || sum != restored {
		t.Fatalf("the digest of the restored event: %x %v %v", sum, found, err)
	}
	if _, found, err := keeper.KeptDataSum(1); err != nil || found {
		t.Fatalf("a digest of an event not erased: %v %v", found, err)
	}

	storetest.Commit(t, b, store.Batch{
		Records:  []store.Written{{Record: event.Record{ID: 2, JSON: []byte(`{"management":true}`)}, Subject: "/a", Type: event.ErasedType}},
		Erased:   []store.ErasedRecord{{Record: event.Record{ID: 1, JSON: []byte(`{"erased":true}`)}, DataSum: original}},
		Unposted: []store.Posting{{Index: 7, Key: key, ID: 1}},
		Head:     store.Head{Count: 3, LastHash: event.ZeroHash, Commits: 2},
	})
	if r, _, err := b.Record(1); err != nil || string(r.JSON) != `{"erased":true}` {
		t.Fatalf("the erased record: %s %v", r.JSON, err)
	}
	if sum, found, err := keeper.KeptDataSum(1); err != nil || !found || sum != original {
		t.Fatalf("the digest of the erased event: %x %v %v", sum, found, err)
	}
	postings := 0
	if err := b.(store.DataPostingsReader).DataPostings(7, func(dataindex.Key, uint64) error { postings++; return nil }); err != nil || postings != 0 {
		t.Fatalf("postings of the erased event: %d %v", postings, err)
	}

	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := keeper.KeptDataSum(0); err != nil || found {
		t.Fatalf("a digest after the reset: %v %v", found, err)
	}
}

// TestOthersErasureIsFollowed has a node read events into its window of
// recent records; another node then erases one of them (the records
// replaced by a commit made directly on the database, the management
// event written by a second node): once the first node follows the
// management event, it reads the erased record, not the one it held.
func TestOthersErasureIsFollowed(t *testing.T) {
	url := pg.Database(t)
	a := node(t, url)
	written := writeEach(t, a, "/p/0", "/p/1")
	if got, err := scanAll(a, store.Scan{From: 0, To: 1}); err != nil || len(got) != 2 || !bytes.Equal(got[0].JSON, written[0].JSON) {
		t.Fatalf("the records before the erasure: %v %v", got, err)
	}

	other, err := opener(url)()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	head, err := other.Head()
	if err != nil {
		t.Fatal(err)
	}
	erased := bytes.Replace(written[0].JSON, []byte(`"data":{"n":0}`), []byte(`"data":{"$erased":{}}`), 1)
	if bytes.Equal(erased, written[0].JSON) {
		t.Fatalf("no data to erase in %s", written[0].JSON)
	}
	head.Commits++
	storetest.Commit(t, other, store.Batch{
		Erased: []store.ErasedRecord{{Record: event.Record{ID: 0, JSON: erased}, DataSum: event.DataSum{1}}},
		Head:   head,
	})
	b := node(t, url)
	if _, err := b.Write(context.Background(), []event.Candidate{{Source: event.ManagementSource, Subject: "/p", Type: event.ErasedType, Data: []byte(`{}`)}}, nil); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for a.Durable() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the node did not follow the management event")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := scanAll(a, store.Scan{From: 0, To: 1})
	if err != nil || len(got) != 2 || !bytes.Equal(got[0].JSON, erased) || !bytes.Equal(got[1].JSON, written[1].JSON) {
		t.Fatalf("the records after the erasure: %v %v", got, err)
	}
}
