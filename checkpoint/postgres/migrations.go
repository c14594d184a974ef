package postgres

// migrations are the schema's versions in order: migrations[i] takes the
// schema from version i to i+1. Never edit a released entry; append.
var migrations = []string{
	// 1: the first schema.
	`SELECT 1`,
}
