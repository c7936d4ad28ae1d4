package download

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"time"
)

// The states of a download.
const (
	// Pending: the ticket was handed out and not used yet.
	Pending = "pending"
	// Running: the browser fetched the ticket; the answer is being sent.
	Running = "running"
	// Done: the whole answer was sent and the connection accepted its end.
	Done = "done"
	// Failed: the answer stopped before its end (Status.Error says why).
	Failed = "failed"
	// Cancelled: Cancel stopped it.
	Cancelled = "cancelled"
	// Expired: the ticket was not used within its time.
	Expired = "expired"
)

// Errors of the registry.
var (
	// ErrUnknown: no download has this ticket (never, no longer, or used).
	ErrUnknown = errors.New("unknown download")
	// ErrTooMany: every kept download is still pending or running.
	ErrTooMany = errors.New("too many downloads")
	// ErrCancelled is the cause of a running download's context when
	// Cancel stops it.
	ErrCancelled = errors.New("download cancelled")
)

// Request is what a ticket stands for: one request of a downloadable route.
type Request struct {
	// Route is the path of the route, e.g. /api/v1/backup.
	Route string
	// Authorization is the header the ticket's creator sent; the request
	// is authenticated with it again when the ticket is used.
	Authorization string
	// Body is the route's request body.
	Body []byte
	// Filename is the name the browser saves the file under.
	Filename string
}

// Status is what a download did so far, as read-download answers it.
type Status struct {
	State    string `json:"state"`
	Route    string `json:"route"`
	Filename string `json:"filename"`
	// Status is the route's HTTP status, 0 before it answered.
	Status int `json:"status"`
	// Bytes is the number of bytes handed to the connection.
	Bytes int64 `json:"bytes"`
	// Lines counts the lines sent by their type ("event", "row", ...).
	Lines map[string]int64 `json:"lines"`
	// Headers are the route's Eventstore-* response headers.
	Headers map[string]string `json:"headers"`
	// LastEventHash is the hash of the last event line sent, if any.
	LastEventHash string `json:"lastEventHash"`
	// Error says why a download failed; empty otherwise.
	Error   string     `json:"error"`
	Created time.Time  `json:"created"`
	Ended   *time.Time `json:"ended"`
}

// Options are the limits of a Registry.
type Options struct {
	// Unused is how long a ticket may wait for its first use.
	Unused time.Duration
	// Keep is how long the status of an ended download stays readable.
	Keep time.Duration
	// Max is how many downloads the registry keeps at once.
	Max int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultOptions: a ticket lives 60 s unused, a status 10 minutes after its
// end, 64 downloads at most.
var DefaultOptions = Options{Unused: time.Minute, Keep: 10 * time.Minute, Max: 64}

// Registry holds the downloads by ticket. It is safe for concurrent use.
type Registry struct {
	opts      Options
	mu        sync.Mutex
	downloads map[string]*Download
}

// NewRegistry returns an empty registry with opts (zero fields take the
// defaults).
func NewRegistry(opts Options) *Registry {
	if opts.Unused <= 0 {
		opts.Unused = DefaultOptions.Unused
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultOptions.Keep
	}
	if opts.Max <= 0 {
		opts.Max = DefaultOptions.Max
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Registry{opts: opts, downloads: map[string]*Download{}}
}

// Download is one ticket's download.
type Download struct {
	req     Request
	expires time.Time
	mu      sync.Mutex
	status  Status
	cancel  context.CancelCauseFunc
}

// Request returns what the ticket stands for.
func (d *Download) Request() Request { return d.req }

// Create registers req and returns its ticket (256 random bits, URL-safe)
// and the time until which it may be used.
func (g *Registry) Create(req Request) (ticket string, expires time.Time, err error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, err
	}
	ticket = base64.RawURLEncoding.EncodeToString(raw[:])
	now := g.opts.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	if len(g.downloads) >= g.opts.Max && !g.evictEnded() {
		return "", time.Time{}, ErrTooMany
	}
	d := &Download{req: req, expires: now.Add(g.opts.Unused)}
	d.status = Status{State: Pending, Route: req.Route, Filename: req.Filename, Lines: map[string]int64{}, Headers: map[string]string{}, Created: now}
	g.downloads[ticket] = d
	return ticket, d.expires, nil
}

// Take starts the download of ticket: it succeeds once, while the ticket
// is pending and unexpired. The download's context (derived from ctx) ends
// when Cancel is called.
func (g *Registry) Take(ctx context.Context, ticket string) (context.Context, *Download, error) {
	now := g.opts.Now()
	g.mu.Lock()
	d := g.downloads[ticket]
	g.mu.Unlock()
	if d == nil {
		return nil, nil, ErrUnknown
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(now)
	if d.status.State != Pending {
		return nil, nil, ErrUnknown
	}
	ctx, d.cancel = context.WithCancelCause(ctx)
	d.status.State = Running
	return ctx, d, nil
}

// Status returns the status of ticket's download.
func (g *Registry) Status(ticket string) (Status, error) {
	g.mu.Lock()
	d := g.downloads[ticket]
	g.mu.Unlock()
	if d == nil {
		return Status{}, ErrUnknown
	}
	return d.Status(g.opts.Now()), nil
}

// Cancel stops ticket's download: a pending one can no longer be taken, a
// running one's context ends with ErrCancelled. An ended download is left
// as it is. It returns the status after the cancellation.
func (g *Registry) Cancel(ticket string) (Status, error) {
	g.mu.Lock()
	d := g.downloads[ticket]
	g.mu.Unlock()
	if d == nil {
		return Status{}, ErrUnknown
	}
	now := g.opts.Now()
	d.mu.Lock()
	d.expire(now)
	switch d.status.State {
	case Pending:
		d.status.State = Cancelled
		d.status.Ended = &now
	case Running:
		d.cancel(ErrCancelled)
	}
	d.mu.Unlock()
	return d.Status(now), nil
}

// sweep forgets the downloads ended longer than Keep ago (g.mu held).
func (g *Registry) sweep(now time.Time) {
	for ticket, d := range g.downloads {
		d.mu.Lock()
		d.expire(now)
		if d.status.Ended != nil && now.Sub(*d.status.Ended) > g.opts.Keep {
			delete(g.downloads, ticket)
		}
		d.mu.Unlock()
	}
}

// evictEnded forgets the download that ended first, if one has (g.mu held).
func (g *Registry) evictEnded() bool {
	oldest := ""
	var at time.Time
	for ticket, d := range g.downloads {
		d.mu.Lock()
		if e := d.status.Ended; e != nil && (oldest == "" || e.Before(at)) {
			oldest, at = ticket, *e
		}
		d.mu.Unlock()
	}
	if oldest == "" {
		return false
	}
	delete(g.downloads, oldest)
	return true
}

// expire ends a pending download whose ticket was not used in time (d.mu held).
func (d *Download) expire(now time.Time) {
	if d.status.State == Pending && now.After(d.expires) {
		d.status.State = Expired
		d.status.Ended = &d.expires
	}
}

// Status returns a copy of the download's status.
func (d *Download) Status(now time.Time) Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(now)
	s := d.status
	s.Lines = make(map[string]int64, len(d.status.Lines))
	for k, v := range d.status.Lines {
		s.Lines[k] = v
	}
	s.Headers = make(map[string]string, len(d.status.Headers))
	for k, v := range d.status.Headers {
		s.Headers[k] = v
	}
	return s
}

// Answered records the route's status and its Eventstore-* headers.
func (d *Download) Answered(status int, headers map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Status = status
	for k, v := range headers {
		d.status.Headers[k] = v
	}
}

// Sent records what m let through so far.
func (d *Download) Sent(m *Meter) {
	bytes, lines, lastEventHash := m.Counts()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Bytes = bytes
	for k, v := range lines {
		d.status.Lines[k] = v
	}
	d.status.LastEventHash = lastEventHash
}

// End records the end of a running download: Done when reason is empty,
// Cancelled when cancelled is set, Failed with reason otherwise.
func (d *Download) End(now time.Time, cancelled bool, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case cancelled:
		d.status.State = Cancelled
	case reason != "":
		d.status.State = Failed
		d.status.Error = reason
	default:
		d.status.State = Done
	}
	d.status.Ended = &now
	if d.cancel != nil {
		d.cancel(nil)
	}
}

// Now returns the registry's clock reading.
func (g *Registry) Now() time.Time { return g.opts.Now() }
