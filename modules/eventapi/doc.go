// Package eventapi serves the event endpoints of the HTTP API: it decodes
// requests into the store's terms, calls the store, and encodes the answer
// (JSON, or NDJSON streams of one flushed line per write). It holds no
// storage logic.
//
// Every stream line passes one check (lineStream.send): a stream ends at
// once when its client leaves, and with the final error line when the
// service stops. Lines that take work to produce (events read from
// storage, query rows) are produced in a goroutine of their own and handed
// over through a bounded pipe (lineStream.pump), so that producing and the
// network work in parallel while memory stays flat.
package eventapi
