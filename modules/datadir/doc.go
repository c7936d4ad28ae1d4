// Package datadir owns the data directory: it creates it (mode 0700) or a
// temporary one, holds an exclusive lock on it for the life of the process
// so that a second process cannot use it, keeps the service id that is
// created with it and the format version of the data it holds (which the
// storage module checks and records), and removes a temporary directory on
// shutdown.
package datadir
