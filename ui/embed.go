package ui

import "embed"

// Files are the UI's static files; index.html is the entry page.
//
//go:embed *.html *.css *.js *.png views/*.js
var Files embed.FS
