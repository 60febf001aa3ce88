package valkeytest

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/echomq/emq/inspect"
)

// ParseInfo reads the text of an INFO reply into field → value.
func ParseInfo(text string) map[string]string {
	return maps.Collect(inspect.InfoFields(text))
}

// InfoInt returns the integer field name of INFO fields, or 0 if absent.
func InfoInt(fields map[string]string, name string) int64 {
	v, _ := strconv.ParseInt(fields[name], 10, 64)
	return v
}

// InfoInts returns the integer fields of INFO fields.
func InfoInts(fields map[string]string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range fields {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// Info returns the fields of the INFO sections named, in one call; none if
// the server does not answer.
func (s *Server) Info(sections ...string) map[string]string {
	text, _ := s.Do(append([]string{"INFO"}, sections...)...).ToString()
	return ParseInfo(text)
}

// InfoField returns one field of INFO section, or "" if absent.
func (s *Server) InfoField(section, field string) string {
	return s.Info(section)[field]
}

// Calls is how many times s ran the commands named, together, since its
// stats were last reset (INFO commandstats; a subcommand as
// "client|unblock", a module's command in its own case).
func (s *Server) Calls(names ...string) int64 {
	stats := s.Info("commandstats")
	total := int64(0)
	for _, name := range names {
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats["cmdstat_"+name], "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		total += n
	}
	return total
}

// ProcStatus returns the number that field holds in the server process's
// /proc/<pid>/status, in the file's unit: VmRSS in kB, Threads a count.
func (s *Server) ProcStatus(field string) (int64, error) {
	return StatusNumber("/proc/"+s.InfoField("server", "process_id")+"/status", field)
}

// StatusNumber returns the number that field holds in the /proc status
// file at path — a process's or one thread's (/proc/<pid>/task/<tid>/status)
// — in the file's unit. A file that is gone (a thread that ended) is an
// *fs.PathError.
func StatusNumber(path, field string) (int64, error) {
	status, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, found := strings.CutPrefix(line, field+":"); found {
			if words := strings.Fields(v); len(words) > 0 { // the number, then its unit if any
				return strconv.ParseInt(words[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}
