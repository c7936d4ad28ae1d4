package store

// SetConditionRounds sets how often query preconditions are evaluated
// outside the writer; 0 makes the writer evaluate every one itself.
func SetConditionRounds(s *Store, rounds int) { s.conditionRounds = rounds }
