package download

import (
	"bytes"
	"encoding/json"
)

var (
	typePrefix = []byte(`{"type":"`)
	hashKey    = []byte(`"hash":"`)
)

// hashTail is how far from a line's end its "hash" member is looked for:
// the event lines of a backup end with it.
const hashTail = 96

// Meter follows an NDJSON answer on its way into a file: it passes whole
// lines through, leaves out heartbeat lines (a file has no use for them),
// stops at an error line (the file must not look whole), and counts the
// lines by type. The zero value is ready to use.
type Meter struct {
	carry    []byte // the start of a line not ended yet
	out      []byte
	failed   bool
	message  string
	bytes    int64            // passed so far
	lines    map[string]int64 // passed so far, by type
	lastHash string
}

// Pass takes the next bytes of the answer and returns those to send now:
// the lines that ended in p (a partial line is held until its end). After
// an error line it returns nothing more; Error tells the message.
func (m *Meter) Pass(p []byte) []byte {
	if m.failed {
		return nil
	}
	last := bytes.LastIndexByte(p, '\n')
	if last < 0 {
		m.carry = append(m.carry, p...)
		return nil
	}
	whole, rest := p[:last+1], p[last+1:]
	m.out = m.out[:0]
	direct := len(m.carry) == 0 // no byte held and none dropped: whole goes out as it is
	if !direct {
		end := bytes.IndexByte(whole, '\n')
		m.carry = append(m.carry, whole[:end+1]...)
		if m.keep(m.carry) {
			m.out = append(m.out, m.carry...)
		}
		whole = whole[end+1:]
	}
	start := 0
	for start < len(whole) && !m.failed {
		end := start + bytes.IndexByte(whole[start:], '\n') + 1
		if !m.keep(whole[start:end]) {
			if direct {
				m.out = append(m.out, whole[:start]...)
				direct = false
			}
		} else if !direct {
			m.out = append(m.out, whole[start:end]...)
		}
		start = end
	}
	m.carry = append(m.carry[:0], rest...)
	if m.failed {
		m.carry = m.carry[:0]
	}
	if direct {
		m.bytes += int64(len(whole))
		return whole
	}
	m.bytes += int64(len(m.out))
	return m.out
}

// Rest returns the line held at the end of the answer, if it did not end
// with a newline (and is not a heartbeat or an error line).
func (m *Meter) Rest() []byte {
	if m.failed || len(m.carry) == 0 {
		return nil
	}
	line := m.carry
	m.carry = nil
	if !m.keep(line) {
		return nil
	}
	m.bytes += int64(len(line))
	return line
}

// keep counts line and reports whether it goes into the file.
func (m *Meter) keep(line []byte) bool {
	kind := lineType(line)
	switch kind {
	case "heartbeat":
		return false
	case "error":
		m.failed = true
		m.message = errorMessage(line)
		return false
	case "event":
		tail := line[max(0, len(line)-hashTail):]
		if at := bytes.LastIndex(tail, hashKey); at >= 0 {
			h := tail[at+len(hashKey):]
			if end := bytes.IndexByte(h, '"'); end >= 0 {
				m.lastHash = string(h[:end])
			}
		}
	}
	if m.lines == nil {
		m.lines = map[string]int64{}
	}
	m.lines[kind]++
	return true
}

// Error reports whether an error line came, and its message.
func (m *Meter) Error() (string, bool) { return m.message, m.failed }

// Counts returns the bytes and lines passed so far, by type, and the hash
// of the last event line; the map is the meter's own, for reading only.
func (m *Meter) Counts() (int64, map[string]int64, string) {
	return m.bytes, m.lines, m.lastHash
}

// lineType is the type of an NDJSON line as the server writes it, or
// "other".
func lineType(line []byte) string {
	if !bytes.HasPrefix(line, typePrefix) {
		if len(bytes.TrimSpace(line)) == 0 {
			return "blank"
		}
		return "other"
	}
	rest := line[len(typePrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "other"
	}
	return string(rest[:end])
}

// errorMessage is the message of an error line.
func errorMessage(line []byte) string {
	var v struct {
		Payload struct {
			Error string `json:"error"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(line, &v); err != nil || v.Payload.Error == "" {
		return "the answer ended with an error"
	}
	return v.Payload.Error
}
