package envelope

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestEventKeysAndOrder(t *testing.T) {
	b := &Builder{now: func() time.Time { return time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC) }}
	raw, err := json.Marshal(b.New("/api/v1/ping", TypePingReceived, map[string]string{"message": "pong"}))
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`^\{"specversion":"1\.0","id":"([0-9a-f-]{36})","time":"2026-11-22T10:15:30\.123456789Z","source":"https://github\.com/eventstore-service/eventstore","subject":"/api/v1/ping","type":"io\.eventsourcingdb\.api\.ping-received","datacontenttype":"application/json","data":\{"message":"pong"\}\}$`)
	m := pattern.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("unexpected management event: %s", raw)
	}
	id, err := uuid.Parse(string(m[1]))
	if err != nil || id.Version() != 4 {
		t.Fatalf("id %s is not a UUID v4 (%v)", m[1], err)
	}
}

func TestNilDataIsEmptyObject(t *testing.T) {
	raw, _ := json.Marshal(NewBuilder().New("/api/v1/verify-api-token", TypeAPITokenVerified, nil))
	var decoded map[string]json.RawMessage
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if string(decoded["data"]) != "{}" || len(decoded) != 8 {
		t.Fatalf("got %s", raw)
	}
}

func TestIDsAreFresh(t *testing.T) {
	b := NewBuilder()
	if a, c := b.New("/", TypePingReceived, nil).ID, b.New("/", TypePingReceived, nil).ID; a == c {
		t.Fatalf("two events share the id %s", a)
	}
}
