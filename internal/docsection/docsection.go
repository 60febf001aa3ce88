// Package docsection rewrites one marked section of a markdown document
// and keeps the rest, so that a tool can refresh its numbers in a document
// whose other sections and prose people or other tools write.
package docsection

import "strings"

// Replace returns doc with the body of section name — the lines between
// "<!-- name -->" and "<!-- /name -->" — replaced by body, or with body
// appended as that section when doc has none.
func Replace(doc, name, body string) string {
	begin, end := "<!-- "+name+" -->", "<!-- /"+name+" -->"
	block := begin + "\n" + strings.TrimRight(body, "\n") + "\n" + end + "\n"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		if doc == "" {
			return block
		}
		return strings.TrimRight(doc, "\n") + "\n\n" + block
	}
	rest := strings.TrimPrefix(doc[j+len(end):], "\n")
	return doc[:i] + block + rest
}
