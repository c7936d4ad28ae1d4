package eventapi

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

func benchAPI(b *testing.B) *API {
	b.Helper()
	s := storetest.Start(b, storetest.PebbleAt(b.TempDir(), nil))
	b.Cleanup(func() { storetest.Close(b, s) })
	m, _ := NewMetrics(prometheus.NewRegistry())
	return New(s, event.NewEmitter(nil), envelope.NewBuilder(), m, zap.NewNop(), Options{MaxEventSize: 1 << 20})
}

const benchEvent = `{"source":"https://bench.eventstore.example","subject":"/bench/api/1","type":"io.eventstore.bench.recorded","data":{"amount":1,"currency":"EUR","customer":"c-000001","note":"an ordinary event of a few hundred bytes","items":[{"sku":"a-1","qty":1},{"sku":"b-2","qty":3}]}}`

// BenchmarkDecodeWrite measures decoding and validating a one-event body,
// without and with an isSubjectOnEventId precondition.
func BenchmarkDecodeWrite(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"plain", `{"events":[` + benchEvent + `]}`},
		{"precondition", `{"events":[` + benchEvent + `],"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":"/bench/api/1","eventId":"1234567"}}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			sc := jsonscan.New(nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := decodeWrite(sc, body, 1<<20, testCondition); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteEventsHandler measures the write-events handler for one
// event per request from parallel writers, without the network.
func BenchmarkWriteEventsHandler(b *testing.B) {
	api := benchAPI(b)
	body := []byte(`{"events":[` + benchEvent + `]}`)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			api.writeEvents(rec, httptest.NewRequest("POST", WriteEventsPath, bytes.NewReader(body)))
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}
