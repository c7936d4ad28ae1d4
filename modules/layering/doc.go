// Package layering holds the import rules of the repository, with the
// reason for each, and the test that fails when a package breaks them:
// packages sit in layers, lowest first, and import only their own layer and
// the layers below; the engine imports no HTTP, wiring, metrics or flags;
// only module.go files and the binary import fx. Its tests also keep the
// repository standing on its own: every section a file cites of a document
// in docs/ exists there.
package layering
