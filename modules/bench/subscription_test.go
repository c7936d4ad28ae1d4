package bench

import (
	"encoding/json"
	"testing"
)

func TestDeliveryToken(t *testing.T) {
	for _, c := range []struct {
		line, token string
		ok          bool
	}{
		{`{"type":"delivery","payload":{"delivery":"eyJzIjoiYiJ9","attempt":1,"partition":0,"event":{}}}` + "\n", "eyJzIjoiYiJ9", true},
		{`{"type":"heartbeat","payload":{}}` + "\n", "", false},
		{`{"type":"assignment","payload":{"partitions":[0]}}` + "\n", "", false},
		{`{"type":"delivery","payload":{"delivery":"cut`, "", false},
	} {
		if token, ok := deliveryToken([]byte(c.line)); token != c.token || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.line, token, ok, c.token, c.ok)
		}
	}
	var body struct {
		Subscription string   `json:"subscription"`
		Deliveries   []string `json:"deliveries"`
	}
	if err := json.Unmarshal(ackBody("billing", []string{"a", "b"}), &body); err != nil || body.Subscription != "billing" || len(body.Deliveries) != 2 {
		t.Fatalf("ack body: %+v %v", body, err)
	}
}
