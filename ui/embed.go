// Package ui holds the management UI's static files (HTML, CSS, JavaScript
// modules), embedded into the binary. They contain no data: everything the
// UI shows comes from the token-protected API.
package ui

import "embed"

// Files are the UI's static files; index.html is the entry page.
//
//go:embed *.html *.css *.js *.png views/*.js
var Files embed.FS
