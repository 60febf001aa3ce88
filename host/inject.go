//go:build !emqtest

package host

// injectPanic is where a test build may make a callback panic; a release
// build never does.
func injectPanic(string) {}
