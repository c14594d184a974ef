package temporal

// Exported for the tests of package temporal_test.
var (
	ServedChildID = servedChildID
	ServedRun     = servedRun
	OneText       = oneText
)
