package auth

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
)

// WatchInterval is how often a Watcher looks at the token files.
const WatchInterval = time.Second

// Watcher reads the tokens again when the files they come from change on
// disk (the access file and the token files it names, or the
// --api-token-file), including the symlink swap of a Kubernetes Secret
// volume, and on Reload (SIGHUP). A new version that is invalid is
// refused with an ERROR log, and the tokens before stay in force.
type Watcher struct {
	a    *Authenticator
	cfg  config.Config
	log  *zap.Logger
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // serializes checks
	files []string   // the files the tokens in force came from
	print [sha256.Size]byte
}

// NewWatcher returns the Watcher of the tokens cfg names, which a holds.
func NewWatcher(a *Authenticator, cfg config.Config, log *zap.Logger) *Watcher {
	w := &Watcher{a: a, cfg: cfg, log: log}
	w.files = tokenFiles(cfg, a.Tokens())
	w.print = fingerprint(w.files)
	return w
}

// Start looks at the files every WatchInterval until Stop; with the token
// of --api-token there is nothing to watch.
func (w *Watcher) Start() {
	if len(w.files) == 0 {
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(WatchInterval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.check(false)
			}
		}
	}()
}

// Stop ends what Start started.
func (w *Watcher) Stop() {
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}

// Reload reads the tokens again now, changed on disk or not.
func (w *Watcher) Reload() { w.check(true) }

// check loads the tokens again if their files changed since they were
// last read (or if force), and puts them in force if they are valid.
func (w *Watcher) check(force bool) {
	if len(w.files) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	print := fingerprint(w.files)
	if print == w.print && !force {
		return
	}
	w.print = print // an invalid version is reported once
	ts, err := w.load()
	if err != nil {
		w.log.Error("access file rejected", zap.String("file", w.files[0]), zap.Error(err))
		return
	}
	removed := w.a.Replace(ts)
	w.files = tokenFiles(w.cfg, ts)
	w.print = fingerprint(w.files)
	w.log.Info("access file reloaded", zap.String("file", w.files[0]), zap.Int("tokens", ts.Len()), zap.Int("removed", removed))
}

// load reads the tokens from their files again.
func (w *Watcher) load() (*Tokens, error) {
	cfg := w.cfg
	if cfg.APITokenFile != "" {
		raw, err := os.ReadFile(cfg.APITokenFile)
		if err != nil {
			return nil, err
		}
		cfg.APIToken = string(raw)
	}
	return LoadTokens(cfg, zap.NewNop())
}

// tokenFiles returns the files the tokens ts of cfg come from: the access
// file and the token files it names, or the --api-token-file; none for
// --api-token.
func tokenFiles(cfg config.Config, ts *Tokens) []string {
	switch {
	case cfg.AccessFile != "":
		return append([]string{cfg.AccessFile}, ts.files...)
	case cfg.APITokenFile != "":
		return []string{cfg.APITokenFile}
	}
	return nil
}

// fingerprint returns the digest of the contents of files, by which a
// change of any of them shows (an unreadable file counts as empty).
func fingerprint(files []string) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		raw, _ := os.ReadFile(filepath.Clean(f))
		h.Write([]byte(f))
		h.Write([]byte{0})
		h.Write(raw)
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
