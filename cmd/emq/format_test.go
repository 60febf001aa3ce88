package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteJSONKeepsText: --json writes a name or an error as it is, for a
// terminal or a program — not escaped for a web page (\u003c for <).
func TestWriteJSONKeepsText(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeJSON(&b, map[string]string{"queue": "<a&b>"}))
	assert.Equal(t, "{\n  \"queue\": \"<a&b>\"\n}\n", b.String())
}
