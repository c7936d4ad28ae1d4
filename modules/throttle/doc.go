// Package throttle keeps a repeating log line from flooding the log: it
// lets one occurrence through per interval and counts the ones it held
// back, so that the next line that goes out can say how many there were.
// Keyed does the same for each kind of a line that repeats in several.
package throttle
