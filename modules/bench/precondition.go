package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// WritePrecondition runs clients that each write one event per request to a
// subject of their own for duration, as an application using optimistic
// concurrency does: every write holds only if the subject's latest event is
// the one the client last wrote (isSubjectOnEventId; the first write of a
// subject, isSubjectPristine). A failed precondition (409) is an error;
// after any error the client reads its subject's latest id again.
func (t Target) WritePrecondition(ctx context.Context, name string, clients int, duration time.Duration) Result {
	client := newClient(clients)
	run := time.Now().UnixNano()
	return load(ctx, name, client, clients, 1, duration, func(c int) exchange {
		subject := fmt.Sprintf("/bench/precondition/%d/client-%d", run, c)
		events := writeBody(subject, EventType, 1)
		events = events[:len(events)-1] // the closing brace: the preconditions come first
		var (
			latest  string // the id of the subject's latest event; "" while it has none
			unknown bool   // latest must be read again
			answer  bytes.Buffer
		)
		return func(ctx context.Context) error {
			if unknown {
				id, err := t.latestID(ctx, client, subject)
				if err != nil {
					return err
				}
				latest, unknown = id, false
			}
			answer.Reset()
			if err := t.call(ctx, client, "/api/v1/write-events", preconditionBody(events, subject, latest), &answer); err != nil {
				unknown = true
				return err
			}
			id, ok := eventID(answer.Bytes())
			if !ok {
				unknown = true
				return fmt.Errorf("no event id in the answer %.100q", answer.Bytes())
			}
			latest = strconv.FormatUint(id, 10)
			return nil
		}
	})
}

// preconditionBody completes events, a write-events body without its
// closing brace, with subjectPrecondition(subject, latest).
func preconditionBody(events []byte, subject, latest string) []byte {
	body := make([]byte, 0, len(events)+len(subject)+100)
	body = append(body, events...)
	return fmt.Appendf(body, `,"preconditions":[%s]}`, subjectPrecondition(subject, latest))
}

// subjectPrecondition is the precondition that subject's latest event is
// latest, or that subject has none when latest is "".
func subjectPrecondition(subject, latest string) string {
	if latest == "" {
		return fmt.Sprintf(`{"type":"isSubjectPristine","payload":{"subject":%q}}`, subject)
	}
	return fmt.Sprintf(`{"type":"isSubjectOnEventId","payload":{"subject":%q,"eventId":%q}}`, subject, latest)
}

// latestID returns the id of subject's latest event, "" if it has none.
func (t Target) latestID(ctx context.Context, client *http.Client, subject string) (string, error) {
	body := fmt.Appendf(nil, `{"subject":%q,"options":{"order":"antichronological"}}`, subject)
	resp, err := t.post(ctx, client, "/api/v1/read-events", body)
	if err != nil {
		return "", fmt.Errorf("read the latest event of %s: %w", subject, err)
	}
	defer resp.Body.Close() // before the end of the stream: the connection is dropped
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("read the latest event of %s: answered %d", subject, resp.StatusCode)
	}
	line, err := bufio.NewReader(resp.Body).ReadSlice('\n')
	if err == io.EOF && len(line) == 0 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the latest event of %s: %w", subject, err)
	}
	id, ok := eventID(line)
	if !ok {
		return "", fmt.Errorf("read the latest event of %s: no event id in %.100q", subject, line)
	}
	return strconv.FormatUint(id, 10), nil
}
