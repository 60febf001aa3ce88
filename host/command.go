package host

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"
)

// KeyFlags describe what a command does to its keys (the CMD_KEY_* flags).
type KeyFlags uint64

// The key flags the module's commands use.
const (
	KeyRO     KeyFlags = 1 << 0
	KeyRW     KeyFlags = 1 << 1
	KeyAccess KeyFlags = 1 << 4
	KeyUpdate KeyFlags = 1 << 5
	KeyInsert KeyFlags = 1 << 6
	KeyDelete KeyFlags = 1 << 7
)

// ArgType is the type of a documented argument.
type ArgType int

// The argument types COMMAND DOCS shows.
const (
	ArgString  ArgType = 0
	ArgInteger ArgType = 1
	ArgKey     ArgType = 3
	ArgBlock   ArgType = 8
)

// ArgSpec documents one argument for COMMAND DOCS and valkey-cli's hints.
type ArgSpec struct {
	Name     string
	Type     ArgType
	Summary  string
	Multiple bool      // the argument may repeat
	Optional bool      // the argument may be left out
	Sub      []ArgSpec // a block's parts
}

// CommandSpec is everything the server is told about one command.
type CommandSpec struct {
	Name       string
	Arity      int      // as COMMAND INFO has it: -N means at least N
	Keys       int      // how many keys follow numkeys, at fixed positions from argument 2
	Flags      string   // command flags, one space between words
	ACL        string   // ACL categories, one space between words
	KeyFlags   KeyFlags // what the command does to its keys; 0 for a command with none
	Summary    string
	Complexity string
	Since      string
	Args       []ArgSpec
}

// Register creates the command, documents it, puts it in its ACL categories
// and routes its calls to h. Its keys are EVAL-style — argument 1 is
// numkeys and the keys follow — and their number is fixed, so the server
// learns their positions from the command itself (first 2, last 1+Keys,
// step 1) and from a range key spec: clients route by COMMAND INFO alone.
func (m *Module) Register(spec CommandSpec, h Handler) error {
	name := C.CString(spec.Name)
	defer C.free(unsafe.Pointer(name))
	flags := C.CString(spec.Flags)
	defer C.free(unsafe.Pointer(flags))
	verb := len(handlers)
	readonly := C.int(0)
	if slices.Contains(strings.Fields(spec.Flags), "readonly") {
		readonly = 1
	}
	if C.emq_create_command(m.ctx, C.int(verb), name, flags, readonly, C.int(spec.Keys)) != 0 {
		return fmt.Errorf("%s: cannot create the command (flags %q)", spec.Name, spec.Flags)
	}
	handlers = append(handlers, h)
	if err := m.document(name, spec); err != nil {
		return err
	}
	if spec.ACL == "" {
		return nil
	}
	if !m.Has("RedisModule_SetCommandACLCategories") {
		m.Log(Warning, spec.Name+": this server cannot set ACL categories; the command is in none")
		return nil
	}
	acl := C.CString(spec.ACL)
	defer C.free(unsafe.Pointer(acl))
	if C.emq_set_acl_categories(m.ctx, name, acl) != 0 {
		return fmt.Errorf("%s: cannot set ACL categories %q", spec.Name, spec.ACL)
	}
	return nil
}

// document sets the command's info: arity, the key spec and the docs.
func (m *Module) document(name *C.char, spec CommandSpec) error {
	var a cAlloc
	defer a.free()
	keys := spec.Keys
	if spec.KeyFlags == 0 {
		keys = 0
	}
	rc := C.emq_set_command_info(m.ctx, name, a.str(spec.Summary), a.str(spec.Complexity), a.str(spec.Since),
		C.int(spec.Arity), C.int(keys), C.uint64_t(spec.KeyFlags), a.args(spec.Args))
	if rc != 0 {
		return fmt.Errorf("%s: the server refused the command info", spec.Name)
	}
	return nil
}

// cAlloc is C memory for one registration, freed together.
type cAlloc []unsafe.Pointer

func (a *cAlloc) calloc(n, size C.size_t) unsafe.Pointer {
	p := C.calloc(n, size)
	*a = append(*a, p)
	return p
}

func (a *cAlloc) str(s string) *C.char {
	if s == "" {
		return nil
	}
	p := C.CString(s)
	*a = append(*a, unsafe.Pointer(p))
	return p
}

// args lays out a NULL-terminated argument array, recursively.
func (a *cAlloc) args(specs []ArgSpec) *C.emq_cmd_arg {
	if len(specs) == 0 {
		return nil
	}
	arr := unsafe.Slice((*C.emq_cmd_arg)(a.calloc(C.size_t(len(specs)+1), C.sizeof_emq_cmd_arg)), len(specs)+1)
	for i, s := range specs {
		arr[i].name = a.str(strings.ToLower(s.Name))
		arr[i]._type = C.int(s.Type)
		arr[i].key_spec_index = -1
		if s.Type == ArgKey {
			arr[i].key_spec_index = 0
		}
		arr[i].summary = a.str(s.Summary)
		if s.Multiple {
			arr[i].flags |= 2 // MULTIPLE
		}
		if s.Optional {
			arr[i].flags |= 1 // OPTIONAL
		}
		arr[i].subargs = a.args(s.Sub)
	}
	return &arr[0]
}

func (a *cAlloc) free() {
	for _, p := range *a {
		C.free(p)
	}
}
