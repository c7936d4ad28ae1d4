package download

import (
	"bytes"
	"strings"
	"testing"
)

// TestMeterSplitsAnywhere feeds an answer cut at every possible place and
// checks that the file is the answer without heartbeats, with its counts.
func TestMeterSplitsAnywhere(t *testing.T) {
	answer := `{"type":"event","payload":{"event":{"id":"0"},"hash":"aa"}}` + "\n" +
		`{"type":"heartbeat","payload":{}}` + "\n" +
		`{"type":"event","payload":{"event":{"id":"1"},"hash":"bb"}}` + "\n" +
		`{"type":"schema","payload":{}}`
	want := strings.Replace(answer, `{"type":"heartbeat","payload":{}}`+"\n", "", 1)
	for cut := 0; cut <= len(answer); cut++ {
		for second := cut; second <= len(answer); second++ {
			var m Meter
			var file bytes.Buffer
			file.Write(m.Pass([]byte(answer[:cut])))
			file.Write(m.Pass([]byte(answer[cut:second])))
			file.Write(m.Pass([]byte(answer[second:])))
			file.Write(m.Rest())
			if file.String() != want {
				t.Fatalf("cut at %d, %d: %q", cut, second, file.String())
			}
			n, lines, last := m.Counts()
			if n != int64(len(want)) || lines["event"] != 2 || lines["schema"] != 1 || lines["heartbeat"] != 0 || last != "bb" {
				t.Fatalf("cut at %d, %d: %d bytes, %v, last hash %q", cut, second, n, lines, last)
			}
		}
	}
}

func TestMeterStopsAtAnErrorLine(t *testing.T) {
	var m Meter
	out := string(m.Pass([]byte(`{"type":"row","payload":1}` + "\n" + `{"type":"error","payload":{"error":"disk gone"}}` + "\n" + `{"type":"row","payload":2}` + "\n")))
	if out != `{"type":"row","payload":1}`+"\n" {
		t.Errorf("passed %q", out)
	}
	if more := m.Pass([]byte(`{"type":"row","payload":3}` + "\n")); len(more) != 0 || len(m.Rest()) != 0 {
		t.Errorf("passed %q after the error", more)
	}
	if msg, failed := m.Error(); !failed || msg != "disk gone" {
		t.Errorf("error %q %v", msg, failed)
	}
}
