package pebblestore

import (
	"github.com/cockroachdb/pebble/v2"
)

// separatedValueSize is the smallest value Pebble keeps out of its tables:
// every event record is larger (its hash and predecessor hash alone are 128
// bytes of hex), index postings and the head are smaller.
const separatedValueSize = 256

// valueSeparation is the store's policy of Pebble's value separation. The
// flush of a memtable writes the event records to blob files, and the
// tables keep their keys with a reference; a compaction then moves keys
// and references down the levels, not the records, which were most of the
// bytes that compactions of a busy store rewrote. A read of a record
// follows one more reference. Where a compaction would make a table refer
// to more than ten overlapping blob files, it writes their records
// together into new ones, so that reads stay local.
//
// Records are overwritten only by erasures, and only Reset deletes them,
// so blob files collect garbage only from those. Pebble rewrites blob
// files with garbage once a fifth of all their values is garbage, and
// while an erasure's Purge runs, as soon as any is: the erased records
// must leave the files at once. A file of any age qualifies, as the
// records an erasure replaces may have been written a moment before.
func (p *purgeState) valueSeparation() pebble.ValueSeparationPolicy {
	garbage := 0.2
	if p.rewriting.Load() {
		garbage = 0
	}
	return pebble.ValueSeparationPolicy{
		Enabled:               true,
		MinimumSize:           separatedValueSize,
		MaxBlobReferenceDepth: 10,
		TargetGarbageRatio:    garbage,
	}
}
