// Package ui holds the management UI's static files (HTML, CSS, JavaScript
// modules), embedded into the binary. They contain no data: everything the
// UI shows comes from the token-protected API.
package ui
