package storage

// SkippedObjects is the counter of refused stored values, for tests.
var SkippedObjects = skippedObjects
