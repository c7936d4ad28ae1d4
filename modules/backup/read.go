package backup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// Limits bound what the lines of a backup may hold, as the service bounds
// what it writes and registers.
type Limits struct {
	// MaxEventSize bounds the canonical data of one event in bytes (the
	// service's --max-event-size); 0 for no bound.
	MaxEventSize int64
	// MaxSchemaSize bounds one schema in bytes: a registration's request
	// body holds it, so the service's --max-request-size.
	MaxSchemaSize int64
	// MaxSubscriptions bounds the subscription lines (the service's
	// --max-subscriptions); 0 for no bound.
	MaxSubscriptions int
}

// lineOverhead bounds what a line holds besides an event's data or a
// schema: the other members of an event, each at most a few kilobytes even
// with every character escaped, or a schema line's event type.
const lineOverhead = 64 << 10

// MaxLine returns the length of the longest line a valid backup may hold
// within l, with its newline; 0 when l bounds no event.
func (l Limits) MaxLine() int {
	if l.MaxEventSize <= 0 {
		return 0
	}
	return int(max(l.MaxEventSize, l.MaxSchemaSize)) + lineOverhead
}

// Reader reads and proves the lines of a backup; it is a
// restore.Source. A bad line ends it with a *restore.BackupError that
// names the line; so does a line longer than any valid one, as soon as it
// is, without reading more of it.
type Reader struct {
	in           *bufio.Reader
	maxEventSize int64
	maxLine      int // 0: no bound
	sc           jsonscan.Scanner
	line         int
	next         uint64 // the id the next event must have
	prevHash     []byte
	prevTime     string
	schemas      bool // a schema line was read: no event may follow
	subs         int  // subscription lines read: no event or schema may follow one
	indexes      bool // a data index line was read: no event or schema may follow
	maxSubs      int
	buf          []byte
	record       []byte // the record of the last event, reused
	lineType     []byte
	f            fields // the members of the last event, reused
	canonical    []byte // the canonical form of the last event's data
}

// NewReader returns a Reader of in whose lines hold what limits allow.
func NewReader(in io.Reader, limits Limits) *Reader {
	return &Reader{in: bufio.NewReaderSize(in, 1<<20), maxEventSize: limits.MaxEventSize, maxLine: limits.MaxLine(), maxSubs: limits.MaxSubscriptions, prevHash: []byte(event.ZeroHash)}
}

// Next returns the next line's event or schema, io.EOF after the last. An
// event's record is valid until the next call.
func (r *Reader) Next() (restore.Item, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return restore.Item{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		item, err := r.parse(line)
		if err != nil {
			var backupErr *restore.BackupError
			if !errors.As(err, &backupErr) {
				err = &restore.BackupError{Line: r.line, Detail: err.Error()}
			}
			return restore.Item{}, err
		}
		item.Line = r.line
		return item, nil
	}
}

// readLine returns the next line without its newline; a last line without
// one was cut off, and one longer than maxLine is refused as soon as it is.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		part, err := r.in.ReadSlice('\n')
		if r.maxLine > 0 && len(r.buf)+len(part) > r.maxLine {
			r.line++
			return nil, &restore.BackupError{Line: r.line, Detail: fmt.Sprintf("the line is longer than the limit of %d bytes", r.maxLine)}
		}
		r.buf = append(r.buf, part...)
		switch {
		case err == nil:
			r.line++
			return r.buf[:len(r.buf)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(r.buf) == 0:
			return nil, io.EOF
		case err == io.EOF:
			r.line++
			return nil, &restore.BackupError{Line: r.line, Detail: "the line is cut off (no newline at the end of the backup)"}
		default:
			return nil, fmt.Errorf("read the backup: %w", err)
		}
	}
}

// parse reads one line: its type and payload. An event's payload after its
// type (the order backups are written in) is proved in the same pass.
func (r *Reader) parse(line []byte) (restore.Item, error) {
	var (
		lineType = r.lineType[:0]
		payload  []byte
		f        *fields
		eventErr error
	)
	r.sc.Reset(line)
	err := r.sc.ObjectBytes(func(key []byte) error {
		switch string(key) {
		case "type":
			t, err := r.sc.StringBytes()
			lineType = append(lineType[:0], t...)
			return err
		case "payload":
			if string(lineType) == "event" && !r.schemas && !r.indexes && r.subs == 0 {
				f, eventErr = r.fields()
				if eventErr != nil {
					return errStop
				}
				return nil
			}
			var err error
			payload, err = r.sc.Raw()
			return err
		}
		return fmt.Errorf("unknown member %q", key)
	})
	r.lineType = lineType
	if err == errStop {
		return restore.Item{}, eventErr
	}
	if err == nil {
		err = r.sc.End()
	}
	if err != nil {
		return restore.Item{}, fmt.Errorf("malformed line: %w", err)
	}
	switch string(lineType) {
	case "event":
		if r.subs > 0 {
			return restore.Item{}, errors.New("an event after the subscriptions")
		}
		if r.indexes {
			return restore.Item{}, errors.New("an event after the data indexes")
		}
		if r.schemas {
			return restore.Item{}, errors.New("an event after the schemas")
		}
		if f == nil { // the payload came before the type
			r.sc.Reset(payload)
			if f, err = r.fields(); err != nil {
				return restore.Item{}, err
			}
		}
		w, err := r.event(f)
		return restore.Item{Event: w}, err
	case "schema":
		if r.subs > 0 {
			return restore.Item{}, errors.New("a schema after the subscriptions")
		}
		if r.indexes {
			return restore.Item{}, errors.New("a schema after the data indexes")
		}
		r.schemas = true
		sw, err := r.schema(payload)
		return restore.Item{Schema: sw}, err
	case "subscription":
		if r.subs++; r.maxSubs > 0 && r.subs > r.maxSubs {
			return restore.Item{}, fmt.Errorf("%w (the limit is %d)", subscriptions.ErrTooMany, r.maxSubs)
		}
		state, err := subscriptions.FromBackup(payload, r.next, time.Now())
		return restore.Item{State: state}, err
	case "dataIndex":
		r.indexes = true
		d, err := dataIndex(payload)
		return restore.Item{DataIndex: d}, err
	case "error":
		return restore.Item{}, fmt.Errorf("an error line: the backup ended with an error: %s", payload)
	}
	return restore.Item{}, fmt.Errorf("unknown line type %q", lineType)
}

// errStop ends the scan of a line whose event payload failed; the failure
// is reported as it is.
var errStop = errors.New("stop")

// schema reads the payload of a schema line.
func (r *Reader) schema(payload []byte) (*store.SchemaWritten, error) {
	var sw store.SchemaWritten
	r.sc.Reset(payload)
	err := r.sc.Object(func(key string) error {
		var err error
		switch key {
		case "eventType":
			sw.Type, _, err = r.sc.String()
		case "schema":
			var raw []byte
			if raw, err = r.sc.Raw(); err == nil {
				sw.Raw = bytes.Clone(raw)
			}
		default:
			err = fmt.Errorf("unknown member %q", key)
		}
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("malformed schema line: %w", err)
	case !event.ValidType(sw.Type):
		return nil, fmt.Errorf("invalid event type: %s", event.Quote(sw.Type))
	case len(sw.Raw) == 0 || sw.Raw[0] != '{':
		return nil, fmt.Errorf("the schema of %s is not a JSON object", sw.Type)
	}
	return &sw, nil
}

// dataIndex reads the payload of a data index line: a definition as
// register-data-index takes it.
func dataIndex(payload []byte) (*dataindex.Definition, error) {
	var d dataindex.Definition
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("malformed data index line: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("data index %s: %w", event.Quote(d.Name), err)
	}
	return &d, nil
}
