package valkeytest

import "strings"

// startMark is in the line every server writes first as it starts:
// "oO0OoO0OoO0Oo Valkey is starting oO0OoO0OoO0Oo", and Redis's likewise.
const startMark = "oO0OoO0OoO0Oo"

// routine are the warning-level lines ("#") servers write when nothing is
// wrong: the host's memory-overcommit advice, which every server here
// prints, and the start, shutdown and diskless-sync notices that Redis 7.0
// and 8.0 write at warning level where Valkey writes them at notice level.
var routine = []string{
	"Memory overcommit",
	startMark,
	"Redis version=",
	"Configuration loaded",
	"Server initialized",
	"User requested shutdown",
	"is now ready to exit",
	"Diskless rdb transfer, done reading from pipe",
}

// Warnings returns the warning-level lines ("#") the server wrote since it
// last started, other than the routine ones and the module's load notes
// (see LoadWarnings).
func (s *Server) Warnings() []string {
	log := s.Log()
	if i := strings.LastIndex(log, startMark); i >= 0 {
		log = log[i:]
	}
	_, rest := scanWarnings(log)
	return rest
}

// ModuleWarnings returns the warning-level lines the module ("<emq>") wrote
// while serving, over the whole log.
func (s *Server) ModuleWarnings() []string {
	_, rest := scanWarnings(s.Log())
	var out []string
	for _, line := range rest {
		if strings.Contains(line, " # <emq>") {
			out = append(out, line)
		}
	}
	return out
}

// LoadWarnings returns the warning-level lines the module wrote while it
// loaded, over the whole log: what this server lacks and what works
// instead (on Redis 7.0, that there are no module ACL categories). They
// are the module lines right before the server's "Module 'emq' loaded".
func (s *Server) LoadWarnings() []string {
	load, _ := scanWarnings(s.Log())
	return load
}

// scanWarnings returns the warning-level lines of log that are not
// routine, split into the module's load notes and the rest.
func scanWarnings(log string) (load, rest []string) {
	var module []string // the module's warnings since the last line of another source
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "<emq> ") {
			if strings.Contains(line, " # ") {
				module = append(module, line)
			}
			continue
		}
		if strings.Contains(line, "Module 'emq' loaded") {
			load = append(load, module...)
		} else {
			rest = append(rest, module...)
		}
		module = nil
		if strings.Contains(line, " # ") && !isRoutine(line) {
			rest = append(rest, line)
		}
	}
	return load, append(rest, module...)
}

func isRoutine(line string) bool {
	for _, r := range routine {
		if strings.Contains(line, r) {
			return true
		}
	}
	return false
}
