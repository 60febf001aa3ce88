// Package docs replays every example in the project's markdown — valkey-cli
// transcripts against a real server with the module, and code blocks in Go,
// Python, JavaScript and shell against their printed output — so the docs
// cannot drift from what the module does.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// prompt starts a command line in a valkey-cli transcript.
const prompt = "127.0.0.1:6379> "

// block is one fenced code block of a markdown file.
type block struct {
	lang string
	line int // where its body starts, 1-based
	body string
}

func blocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{lang: strings.TrimPrefix(line, "```"), line: n + 1}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		require.NotEqual(t, dir, filepath.Dir(dir), "no go.mod above the working directory")
		dir = filepath.Dir(dir)
	}
}

// docFiles are the markdown files whose examples must hold.
func docFiles(t *testing.T) []string {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

func TestDocsExamples(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, path := range docFiles(t) {
		bs := blocks(t, path)
		for i, b := range bs {
			name := fmt.Sprintf("%s:%d", filepath.Base(path), b.line)
			switch b.lang {
			case "valkey-cli":
				t.Run(name, func(t *testing.T) { replayTranscript(t, s, b) })
			case "go", "python", "js", "sh":
				require.Less(t, i+1, len(bs), "%s: a %s block needs an output block after it", name, b.lang)
				require.Equal(t, "output", bs[i+1].lang, "%s: a %s block needs an output block after it", name, b.lang)
				t.Run(name, func(t *testing.T) { runCode(t, b, bs[i+1].body) })
			}
		}
	}
}

// replayTranscript sends each command of a transcript through valkey-cli,
// on an empty database, and compares the printed reply.
func replayTranscript(t *testing.T, s *valkeytest.Server, b block) {
	require.NoError(t, s.Do("FLUSHALL").Error())
	require.NoError(t, s.Do("CONFIG", "SET", "emq.append-max-entries", "100000").Error())
	lines := strings.Split(strings.TrimRight(b.body, "\n"), "\n")
	for i := 0; i < len(lines); {
		cmd, ok := strings.CutPrefix(lines[i], prompt)
		require.True(t, ok, "line %d: expected a %q prompt, got %q", b.line+i, prompt, lines[i])
		var want []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], prompt); i++ {
			want = append(want, lines[i])
		}
		c := exec.Command("valkey-cli", "--no-raw", "-p", strconv.Itoa(s.Port))
		c.Stdin = strings.NewReader(cmd + "\n")
		got, err := c.CombinedOutput()
		require.NoError(t, err, "valkey-cli: %s", got)
		wanted, printed := strings.Join(want, "\n"), strings.TrimRight(string(got), "\n")
		if !strings.Contains(wanted, timeMark) {
			require.Equal(t, wanted, printed, "reply to %s", cmd)
			continue
		}
		pattern := strings.ReplaceAll(regexp.QuoteMeta(wanted), timeMark, `\d{13}`)
		require.Regexp(t, "^"+pattern+"$", printed, "reply to %s", cmd)
	}
}

// timeMark stands, in a transcript's reply, for a time the server's clock
// decides (13 decimal digits of Unix ms): a lease deadline, an entry's ID.
const timeMark = "<time>"

// runCode runs a code block and compares what it prints with want.
func runCode(t *testing.T, b block, want string) {
	var c *exec.Cmd
	switch b.lang {
	case "go":
		// build/_examples: inside the module (so it can import it), hidden from ./...
		dir := filepath.Join(repoRoot(t), "build", "_examples", strconv.Itoa(b.line))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.body), 0o644))
		c = exec.Command("go", "run", ".")
		c.Dir = dir
	case "python":
		c = exec.Command("python3", "-c", b.body)
	case "js":
		c = exec.Command("node", "-e", b.body)
	case "sh":
		c = exec.Command("bash", "-c", b.body)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	got, err := c.Output()
	require.NoError(t, err, "%s", stderr.String())
	require.Equal(t, want, string(got))
}
