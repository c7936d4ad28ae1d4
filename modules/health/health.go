package health

import (
	"context"
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Status is the status of a check or of the whole service.
type Status string

// Statuses from best to worst.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

func (s Status) worse(than Status) bool {
	rank := map[Status]int{Pass: 0, Warn: 1, Fail: 2}
	return rank[s] > rank[than]
}

// HTTPStatus maps a status to the response code: fail is 503, else 200.
func (s Status) HTTPStatus() int {
	if s == Fail {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// Observation is the outcome of one check.
type Observation struct {
	// Value is the observed value (a number or a boolean).
	Value any
	// Unit is the unit of Value, if any ("bytes", "s").
	Unit string
	// Status is the check's status.
	Status Status
	// Output explains a status other than pass.
	Output string
}

// Check is one entry of the report's checks, contributed by a module.
type Check struct {
	// Key is the check's name in the report, e.g. "storage:writable".
	Key string
	// ComponentType is "datastore", "system" or "component".
	ComponentType string
	// Observe measures the check now.
	Observe func(ctx context.Context) Observation
}

// Entry is a check's entry in the report.
type Entry struct {
	ComponentType string `json:"componentType"`
	ObservedValue any    `json:"observedValue"`
	ObservedUnit  string `json:"observedUnit,omitempty"`
	Status        Status `json:"status"`
	Time          string `json:"time"`
	Output        string `json:"output,omitempty"`
}

// Report is the health response body; its keys are in this order.
type Report struct {
	Status      Status             `json:"status"`
	Version     string             `json:"version"`
	ReleaseID   string             `json:"releaseId"`
	ServiceID   string             `json:"serviceId"`
	Description string             `json:"description"`
	Output      string             `json:"output,omitempty"`
	Checks      map[string][]Entry `json:"checks"`
	Links       map[string]string  `json:"links"`
}

// Description is the report's description of the service.
const Description = "eventstore event-sourcing database"

// ServiceID returns the id of the service, stable across restarts: created
// with the data directory, or with the database that the nodes share.
type ServiceID func() string

// Reporter assembles reports from the contributed checks.
type Reporter struct {
	checks       []Check
	releaseID    string
	serviceID    func() string
	shuttingDown func() bool
	now          func() time.Time
}

// NewReporter returns a Reporter over checks for the release releaseID.
// serviceID and shuttingDown are asked at every report.
func NewReporter(checks []Check, releaseID string, serviceID func() string, shuttingDown func() bool) *Reporter {
	return &Reporter{checks: checks, releaseID: releaseID, serviceID: serviceID, shuttingDown: shuttingDown, now: time.Now}
}

// Report runs every check and returns the report.
func (r *Reporter) Report(ctx context.Context) Report {
	report := Report{
		Status:      Pass,
		Version:     "1",
		ReleaseID:   r.releaseID,
		ServiceID:   r.serviceID(),
		Description: Description,
		Checks:      make(map[string][]Entry, len(r.checks)),
		Links:       map[string]string{"self": Path, "metrics": Path + "?format=openmetrics"},
	}
	for _, c := range r.checks {
		o := c.Observe(ctx)
		report.Checks[c.Key] = append(report.Checks[c.Key], Entry{
			ComponentType: c.ComponentType,
			ObservedValue: o.Value,
			ObservedUnit:  o.Unit,
			Status:        o.Status,
			Time:          event.FormatTime(r.now()),
			Output:        o.Output,
		})
		if o.Status.worse(report.Status) {
			report.Status, report.Output = o.Status, o.Output
		}
	}
	if r.shuttingDown() {
		report.Status, report.Output = Fail, "shutting down"
	}
	return report
}

// NewUptimeCheck returns the check "uptime": seconds since start.
func NewUptimeCheck(start time.Time) Check {
	return Check{
		Key:           "uptime",
		ComponentType: "system",
		Observe: func(context.Context) Observation {
			return Observation{Value: time.Since(start).Seconds(), Unit: "s", Status: Pass}
		},
	}
}
