// Package verify checks a whole store through the backend contract alone:
// ids contiguous from 0, every hash recomputed, every predecessor link,
// strictly increasing times, every event of a type with a schema against
// it, the head, and the backend's own indexes where it can check them
// (store.IndexVerifiable). Offline (the verify command) it reads a backend
// nothing writes; online (Online) it checks the durable snapshot of a
// running store while it goes on writing.
package verify
