package mcpapi

import (
	"encoding/json"
	"net/http"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/eventapi"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/opsapi"
)

// tool is an MCP tool and the route it calls.
type tool struct {
	name, title, description string
	method, path             string
	input                    string // the JSON Schema of the arguments: the route's body
	// line is, for a route answering NDJSON, the type of the lines the
	// tool returns as items (under items); "" for a route answering JSON.
	line, items string
	// write marks the tools that change the store: only with
	// --mcp-allow-writes.
	write bool
	// next returns the arguments that continue a cut answer after its
	// last item, or nil when the route has no bound to continue from; then
	// hint says what to do instead.
	next func(args, last json.RawMessage) json.RawMessage
	hint string
}

// noArguments is the input schema of a route without a body.
const noArguments = `{"type":"object","properties":{},"additionalProperties":false}`

// bound is the schema of a lower or upper bound of read-events.
const bound = `{"type":"object","properties":{"id":{"type":"string","description":"An event id, a decimal number as a string (\"0\" is the first event)."},"type":{"type":"string","enum":["inclusive","exclusive"]}},"required":["id","type"]}`

// tools returns the tools; the write tools only when writes is set.
func tools(writes bool) []tool {
	all := []tool{
		{
			name: "esdb_ping", title: "Ping", method: http.MethodGet, path: lifecycle.PingPath, input: noArguments,
			description: "Checks that the event store is reachable and running. Use it first when other tools fail, to tell a network or service problem from a problem with the request. Takes no arguments; returns the ping event.",
		},
		{
			name: "esdb_verify_api_token", title: "Verify the API token", method: http.MethodPost, path: auth.VerifyPath, input: noArguments,
			description: "Checks that the token this client connects with is valid. Takes no arguments; returns the verification event. A tool refused with \"forbidden: insufficient permissions\" means the token is valid but lacks the grant: ask the operator for it.",
		},
		{
			name: "esdb_read_events", title: "Read events", method: http.MethodPost, path: eventapi.ReadEventsPath, line: "event", items: "events",
			input: `{"type":"object","properties":{` +
				`"subject":{"type":"string","description":"The subject whose events to read, a path such as /books/42. / is the root: with recursive, every event of the store."},` +
				`"options":{"type":"object","properties":{` +
				`"recursive":{"type":"boolean","description":"Also read the events of every subject below subject (default false)."},` +
				`"order":{"type":"string","enum":["chronological","antichronological"],"description":"Oldest first (default) or newest first."},` +
				`"lowerBound":` + bound + `,"upperBound":` + bound + `,` +
				`"fromLatestEvent":{"type":"object","description":"Start at the latest event of a subject and type (not with lowerBound).","properties":{"subject":{"type":"string"},"type":{"type":"string"},"ifEventIsMissing":{"type":"string","enum":["read-everything","read-nothing"]}},"required":["subject","type","ifEventIsMissing"]}` +
				`},"additionalProperties":false}},"required":["subject"],"additionalProperties":false}`,
			description: "Reads stored events of a subject, in order, as CloudEvents (id, time, subject, type, data, hash...). Use it to see what happened to an entity, or to sample a part of the store: subject / with recursive true reads everything, bounds by event id narrow it. " +
				"Example: {\"subject\":\"/books/42\",\"options\":{\"recursive\":false}}. Long answers are cut; the result then holds continueWith, the arguments that read on from where it stopped. To filter or aggregate by data, prefer esdb_run_eventql_query.",
			next: nextEvents,
		},
		{
			name: "esdb_read_subjects", title: "Read subjects", method: http.MethodPost, path: eventapi.ReadSubjectsPath, line: "subject", items: "subjects",
			input:       `{"type":"object","properties":{"baseSubject":{"type":"string","description":"The subject whose subtree to list, such as /books; / lists every subject."}},"required":["baseSubject"],"additionalProperties":false}`,
			description: "Lists the subjects (entity paths such as /books/42) at and below baseSubject that hold events, depth first. Use it to learn how the store's entities are named before reading their events. Example: {\"baseSubject\":\"/\"}.",
			hint:        "list a narrower baseSubject to see the subjects after these",
		},
		{
			name: "esdb_read_event_types", title: "Read event types", method: http.MethodPost, path: eventapi.ReadEventTypesPath, line: "eventType", items: "eventTypes", input: noArguments,
			description: "Lists every event type the store knows (those of stored events and those with a registered schema), with its JSON Schema if it has one. Use it before writing a query, to know which types exist and what their data holds. Takes no arguments.",
		},
		{
			name: "esdb_read_event_type", title: "Read an event type", method: http.MethodPost, path: eventapi.ReadEventTypePath,
			input:       `{"type":"object","properties":{"eventType":{"type":"string","description":"The event type, reverse-domain style, such as io.example.book-borrowed."}},"required":["eventType"],"additionalProperties":false}`,
			description: "Reads one event type: whether events of it are stored and the JSON Schema registered for it, if any. Use it to learn the shape of an event's data. Example: {\"eventType\":\"io.example.book-borrowed\"}.",
		},
		{
			name: "esdb_run_eventql_query", title: "Run an EventQL query", method: http.MethodPost, path: eventapi.RunEventQLQueryPath, line: "row", items: "rows",
			input: `{"type":"object","properties":{"query":{"type":"string","description":"An EventQL query."}},"required":["query"],"additionalProperties":false}`,
			description: "Runs an EventQL query over all events and returns its rows. Use it to filter by data, join, group and count: EventQL reads like SQL over events, FROM e IN events WHERE ... PROJECT INTO .... " +
				"Example: {\"query\":\"FROM e IN events WHERE e.type == \\\"io.example.book-borrowed\\\" GROUP BY e.data.title PROJECT INTO { title: e.data.title, loans: COUNT() }\"}. Prefer aggregates (COUNT, GROUP BY, TOP) to reading many rows: long answers are cut.",
			hint: "aggregate the query (GROUP BY, COUNT), or add SKIP with the number of rows received and run it again",
		},
		{
			name: "eventstore_read_data_indexes", title: "Read data indexes", method: http.MethodPost, path: eventapi.ReadDataIndexesPath, line: "dataIndex", items: "dataIndexes", input: noArguments,
			description: "Lists the data indexes: fields of event data (such as /reader) whose values are indexed, so that an EventQL condition on them reads only the matching events. Use it to write queries that stay cheap on a large store. Takes no arguments.",
		},
		{
			name: "eventstore_read_subscriptions", title: "Read subscriptions", method: http.MethodPost, path: eventapi.ReadSubscriptionsPath, line: "subscription", items: "subscriptions", input: noArguments,
			description: "Lists the subscriptions (durable consumer groups) with their filters, positions, lag and parked events. Use it to see which consumers fall behind or fail. Takes no arguments; needs the operate grant.",
		},
		{
			name: "eventstore_diagnostics", title: "Diagnostics", method: http.MethodGet, path: opsapi.DiagnosticsPath, input: noArguments,
			description: "Reports the service's state: version, system (CPUs, memory limit), process (uptime, heap), the effective options and limits (secrets redacted), and storage (backend, head, events, size). Use it to explain slowness or refusals. Takes no arguments; needs the operate grant.",
		},
	}
	if !writes {
		return all
	}
	return append(all,
		tool{
			name: "esdb_write_events", title: "Write events", method: http.MethodPost, path: eventapi.WriteEventsPath, items: "events", write: true,
			input: `{"type":"object","properties":{` +
				`"events":{"type":"array","minItems":1,"items":{"type":"object","properties":{"source":{"type":"string","description":"A URI naming the writer, such as https://library.example.com."},"subject":{"type":"string","description":"The entity's path, such as /books/42."},"type":{"type":"string","description":"Reverse-domain event type, such as io.example.book-borrowed."},"data":{"type":"object","description":"The event's data."}},"required":["source","subject","type","data"]}},` +
				`"preconditions":{"type":"array","description":"Conditions checked atomically before the write: isSubjectPristine {subject}, isSubjectOnEventId {subject, eventId}, isEventQlQueryTrue {query}.","items":{"type":"object","properties":{"type":{"type":"string","enum":["isSubjectPristine","isSubjectOnEventId","isEventQlQueryTrue"]},"payload":{"type":"object"}},"required":["type","payload"]}}` +
				`},"required":["events"],"additionalProperties":false}`,
			description: "Appends events to the store, all or none, and returns them with their ids and hashes. Events are facts: they are never changed or deleted, so write only what the user asked for. " +
				"Example: {\"events\":[{\"source\":\"https://library.example.com\",\"subject\":\"/books/42\",\"type\":\"io.example.book-borrowed\",\"data\":{\"reader\":\"/readers/7\"}}],\"preconditions\":[{\"type\":\"isSubjectPristine\",\"payload\":{\"subject\":\"/books/43\"}}]}.",
		},
		tool{
			name: "esdb_register_event_schema", title: "Register an event schema", method: http.MethodPost, path: eventapi.RegisterEventSchemaPath, write: true,
			input:       `{"type":"object","properties":{"eventType":{"type":"string"},"schema":{"type":"object","description":"A JSON Schema the data of every event of the type must satisfy, existing ones included."}},"required":["eventType","schema"],"additionalProperties":false}`,
			description: "Registers the JSON Schema of an event type; from then on the store refuses events of the type whose data does not satisfy it. It can be registered once and never changed, and it is refused if a stored event violates it. Example: {\"eventType\":\"io.example.book-borrowed\",\"schema\":{\"type\":\"object\",\"properties\":{\"reader\":{\"type\":\"string\"}},\"required\":[\"reader\"]}}.",
		},
	)
}
