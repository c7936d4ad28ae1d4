package pebblestore

// Describe returns figures of the Pebble store for diagnostics: its
// format, tables per level, memtables, WAL, block cache, compactions and
// the data indexes' key filters.
func (b *Backend) Describe() map[string]any {
	m := b.db.Metrics()
	var levels []map[string]any
	for i, l := range m.Levels {
		if l.TablesCount == 0 {
			continue
		}
		levels = append(levels, map[string]any{"level": i, "tables": l.TablesCount, "bytes": l.TablesSize})
	}
	return map[string]any{
		"backend":            "pebble",
		"formatMajorVersion": uint64(b.db.FormatMajorVersion()),
		"diskSpaceBytes":     m.DiskSpaceUsage(),
		"levels":             levels,
		"memtables":          map[string]any{"count": m.MemTable.Count, "bytes": m.MemTable.Size},
		"wal":                map[string]any{"files": m.WAL.Files, "bytes": m.WAL.Size},
		"blockCache":         map[string]any{"bytes": m.BlockCache.Size, "hits": m.BlockCache.Hits, "misses": m.BlockCache.Misses},
		"compactions":        m.Compact.Count,
		"flushes":            m.Flush.Count,
		"keyFilters":         b.absent.describe(),
		"erasedEvents":       b.erasedEvents(),
	}
}
