package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// runFacts says how and where a section's numbers were made, so that
// anyone can make them again and judge them.
func runFacts(s *server, setup string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Command: `%s`\n", commandLine())
	fmt.Fprintf(&b, "- Date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %d × %s, Linux %s; valkey-server %s; %s; commit %s\n",
		runtime.NumCPU(), cpuModel(), kernel(), s.InfoField("server", "valkey_version"), runtime.Version(), commit())
	fmt.Fprintf(&b, "- Setup: %s\n", setup)
	return b.String()
}

// commandLine is the command that reproduces this run, with paths inside
// the working directory made relative so that it works in any checkout.
func commandLine() string {
	args := []string{"go", "run", "./cmd/emq-bench"}
	for _, a := range os.Args[1:] {
		a = displayPath(a)
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// displayPath is path relative to the working directory when it is an
// absolute path inside it, else path as it is.
func displayPath(path string) string {
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsAbs(path) && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// commit names the checkout's commit, marked when the module's sources
// differ from it: the module was then built from uncommitted code.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	module := []string{"diff", "--quiet", "HEAD", "--", "host", "module", "emq", "registry", "errors", "ids", "keys", "cmd/emq-module"}
	if exec.Command("git", module...).Run() != nil {
		c += " with uncommitted module changes"
	}
	return c
}

// loadAverage is the machine's one-minute load average, "unknown" where
// /proc does not say: on a shared machine it tells how far CPU times can
// be trusted.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
