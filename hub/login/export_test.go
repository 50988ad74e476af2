package login

// Test helpers shared with the external test package.
var (
	TestEtcd = testEtcd
	TestKey  = testKey
)
