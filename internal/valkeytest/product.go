package valkeytest

import (
	"fmt"
	"strconv"
	"strings"
)

// Product is which server a Server is: its name and version, as INFO
// server tells them.
type Product struct {
	Name                string // "valkey" or "redis"
	Major, Minor, Patch int
}

// Product returns which server s is. Valkey reports valkey_version (its
// redis_version is the Redis it forked from); Redis only redis_version.
func (s *Server) Product() Product {
	f := s.Info("server")
	p := Product{Name: "valkey"}
	v := f["valkey_version"]
	if v == "" {
		p.Name, v = "redis", f["redis_version"]
	}
	parts := strings.SplitN(v, ".", 3)
	for i, n := range []*int{&p.Major, &p.Minor, &p.Patch} {
		if i < len(parts) {
			*n, _ = strconv.Atoi(parts[i])
		}
	}
	return p
}

// Before reports whether p is the server name at a version below
// major.minor.
func (p Product) Before(name string, major, minor int) bool {
	return p.Name == name && (p.Major < major || p.Major == major && p.Minor < minor)
}

// ModuleACLCategories reports whether the server lets a module put its
// commands in ACL categories (SetCommandACLCategories, AddACLCategory):
// every Valkey does, Redis 7.0 does not — there a module command is in no
// category at all.
func (p Product) ModuleACLCategories() bool {
	return !p.Before("redis", 7, 2)
}

// DryRuns reports whether the server runs a module's Call dry (its "D"
// flag: the checks, not the command): every Valkey and Redis from 7.2 do,
// Redis 7.0 does not.
func (p Product) DryRuns() bool {
	return !p.Before("redis", 7, 2)
}

// VerbGrant returns the ACL rules that grant every emq verb and nothing
// else on s: +@emq, or where the server has no module ACL categories each
// verb by name, as COMMAND LIST lists the module's commands.
func (s *Server) VerbGrant() ([]string, error) {
	if s.Product().ModuleACLCategories() {
		return []string{"+@emq"}, nil
	}
	names, err := s.Do("COMMAND", "LIST", "FILTERBY", "MODULE", "emq").AsStrSlice()
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("COMMAND LIST FILTERBY MODULE emq: %v %q", err, names)
	}
	rules := make([]string, len(names))
	for i, n := range names {
		rules[i] = "+" + n
	}
	return rules, nil
}

// String is the name and version: "valkey 8.0.1".
func (p Product) String() string {
	return fmt.Sprintf("%s %d.%d.%d", p.Name, p.Major, p.Minor, p.Patch)
}

// HasCommand reports whether the server knows the command name (COMMAND
// INFO has a row for it), for the commands newer servers added: WAITAOF
// (Redis 7.2, Valkey), COMMANDLOG (Valkey 8.1).
func (s *Server) HasCommand(name string) bool {
	rows, err := s.Do("COMMAND", "INFO", name).ToArray()
	return err == nil && len(rows) == 1 && !rows[0].IsNil()
}
