// Package storetest starts and stops stores for the tests of the packages
// that build on the storage engine: one helper instead of one per package.
package storetest
