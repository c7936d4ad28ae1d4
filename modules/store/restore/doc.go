// Package restore writes a backup into an empty store, all or nothing,
// through the backend contract while the store's writer pauses
// (store.Store.Exclusive). Package backup reads and verifies the backup's
// lines; this package commits them.
package restore
