package docsection

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReplace(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"an empty document becomes the section",
			"", "<!-- s -->\nnew\n<!-- /s -->\n"},
		{"a document without the section gets it appended",
			"# T\n\ntext\n", "# T\n\ntext\n\n<!-- s -->\nnew\n<!-- /s -->\n"},
		{"the section is replaced and the rest kept",
			"# T\n<!-- s -->\nold\n<!-- /s -->\nafter\n", "# T\n<!-- s -->\nnew\n<!-- /s -->\nafter\n"},
		{"other sections are left alone",
			"<!-- o -->\nx\n<!-- /o -->\n", "<!-- o -->\nx\n<!-- /o -->\n\n<!-- s -->\nnew\n<!-- /s -->\n"},
		{"an end marker before the begin marker is no section",
			"<!-- /s -->\n<!-- s -->\n", "<!-- /s -->\n<!-- s -->\n\n<!-- s -->\nnew\n<!-- /s -->\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Replace(tt.doc, "s", "new\n"))
		})
	}
}
