package pgstore

// Describe returns figures of the PostgreSQL backend for diagnostics: the
// database it writes (its hosts each once, never the password), its schema
// version, whether it answers, the connection pool, the commits it had
// to try again or look up, and the erased events as this node last counted
// them (at its start and after each purge; -1 before). It asks the
// database nothing, so it answers while the database is unreachable.
func (b *Backend) Describe() map[string]any {
	conn := b.pool.Config().ConnConfig
	st := b.pool.Stat()
	return map[string]any{
		"backend":       "postgres",
		"hosts":         hostList(&conn.Config),
		"database":      conn.Database,
		"answering":     !b.live.unresponsive(),
		"schemaVersion": SchemaVersion,
		"pool": map[string]any{
			"maxConnections":    st.MaxConns(),
			"connections":       st.TotalConns(),
			"idle":              st.IdleConns(),
			"acquired":          st.AcquiredConns(),
			"acquires":          st.AcquireCount(),
			"waitedAcquires":    st.EmptyAcquireCount(),
			"acquireWaitMillis": st.AcquireDuration().Milliseconds(),
		},
		"erasedEvents":     b.erasedCount.Load(),
		"commitRetries":    b.commitRetries.Load(),
		"resolvedOutcomes": b.resolved.Load(),
	}
}
