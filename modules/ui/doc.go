// Package ui serves the embedded management UI at the root path: "/" is
// index.html, every other file is served at its own path. Responses carry a
// strict Content-Security-Policy; the files need no token.
package ui
