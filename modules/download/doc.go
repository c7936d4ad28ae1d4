// Package download keeps the downloads of the console: a route's answer
// saved by the browser to a file, however large, without the page holding
// it (docs/api.md §4.12a). A Registry hands out short-lived,
// single-use tickets, each standing for one request of a downloadable
// route with the token that asked for it, and records how each download
// goes; a Meter follows the bytes of the answer on their way out, line by
// line, so that the page can be told what was sent and what went wrong.
package download
